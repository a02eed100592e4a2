<?php
// ward's own check for the dialects: the sum of two numbers, the arguments' count.
[$a, $b] = array_map('intval', preg_split('/\s+/', trim(stream_get_contents(STDIN))));
echo "sum " . ($a + $b) . " args " . ($argc - 1) . "\n";
