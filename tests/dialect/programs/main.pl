# ward's own check for the dialects: the sum of two numbers, the arguments' count.
my ($a, $b) = split ' ', <STDIN>;
print "sum ", $a + $b, " args ", scalar(@ARGV), "\n";
