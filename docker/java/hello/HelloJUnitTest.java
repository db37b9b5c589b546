import static org.junit.jupiter.api.Assertions.assertEquals;

import org.junit.jupiter.api.Test;

/** The same test with JUnit 5, run by its console launcher. */
class HelloJUnitTest {
    @Test
    void greets() {
        assertEquals("Hello, Java!", Hello.greet("Java"));
    }
}
