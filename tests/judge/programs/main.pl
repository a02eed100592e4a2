my ($a, $b) = split ' ', <STDIN>;
print $a + $b, "\n";
