# frozen_string_literal: true

# The hello-world module the golden ruby image is checked with.
module Greet
  def self.greet(name)
    "Hello, #{name}!"
  end
end

puts Greet.greet('Ruby') if $PROGRAM_NAME == __FILE__
