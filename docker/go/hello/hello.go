// Package hello is the hello-world module the golden go image is checked with.
package hello

// Greet says hello.
func Greet(name string) string {
	return "Hello, " + name + "!"
}
