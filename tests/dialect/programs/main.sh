# ward's own check for the dialects: the sum of two numbers, the arguments' count.
read -r a b
echo "sum $((a + b)) args $#"
