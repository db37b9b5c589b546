import java.util.ArrayList;
import java.util.List;

public class Main {
    static class ConfigException extends RuntimeException {
        ConfigException(String message, Throwable cause) { super(message, cause); }
    }

    static int parse(String key, String value) {
        try {
            return Integer.parseInt(value.trim());
        } catch (NumberFormatException e) {
            throw new ConfigException("bad value for '" + key + "': " + value, e);
        }
    }

    static List<Integer> loadPorts(String[] lines) {
        List<Integer> ports = new ArrayList<>();
        for (String line : lines) {
            String[] kv = line.split("=", 2);
            ports.add(parse(kv[0], kv[1]));
        }
        return ports;
    }

    static void start(String[] config) {
        System.out.println("reading " + config.length + " config lines");
        List<Integer> ports = loadPorts(config);
        for (int port : ports) {
            System.out.println("listening on " + port);
        }
    }

    public static void main(String[] args) {
        String[] config = { "http=8080", "https=8443", "admin=80 80", "metrics=9100" };
        start(config);
    }
}
