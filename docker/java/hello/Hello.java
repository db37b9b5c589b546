/** The hello-world class the golden java image is checked with. */
public class Hello {
    static String greet(String name) {
        return "Hello, " + name + "!";
    }

    public static void main(String[] args) {
        System.out.println(greet("Java"));
    }
}
