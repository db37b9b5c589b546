<?php

declare(strict_types=1);

namespace Hello\Tests;

use Hello\Greet;
use PHPUnit\Framework\TestCase;

final class GreetTest extends TestCase
{
    public function testGreet(): void
    {
        $this->assertSame('Hello, PHP!', Greet::greet('PHP'));
    }
}
