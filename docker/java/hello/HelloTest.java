/** A test without a framework: run with java -ea, an assertion that fails exits non-zero. */
public class HelloTest {
    public static void main(String[] args) {
        boolean enabled = false;
        assert enabled = true;
        if (!enabled) throw new IllegalStateException("run with java -ea");
        assert Hello.greet("Java").equals("Hello, Java!") : Hello.greet("Java");
        System.out.println("HelloTest: 1 passed");
    }
}
