// The hello-world module the golden nodejs image is checked with.
export function greet(name) {
  return `Hello, ${name}!`;
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(greet('Node.js'));
