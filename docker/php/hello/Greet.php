<?php

declare(strict_types=1);

namespace Hello;

/** The hello-world class the golden php image is checked with. */
final class Greet
{
    public static function greet(string $name): string
    {
        return "Hello, {$name}!";
    }
}
