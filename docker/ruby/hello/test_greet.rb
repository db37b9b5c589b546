# frozen_string_literal: true

require 'minitest/autorun'
require_relative 'greet'

# Checks Greet.greet.
class TestGreet < Minitest::Test
  def test_greet
    assert_equal 'Hello, Ruby!', Greet.greet('Ruby')
  end
end
