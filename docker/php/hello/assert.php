<?php

declare(strict_types=1);

// The same test without phpunit: an assertion that fails exits non-zero.
require_once __DIR__ . '/Greet.php';

if (\Hello\Greet::greet('PHP') !== 'Hello, PHP!') {
    fwrite(STDERR, "assert.php: greet is wrong\n");
    exit(1);
}
echo \Hello\Greet::greet('PHP'), "\n";
