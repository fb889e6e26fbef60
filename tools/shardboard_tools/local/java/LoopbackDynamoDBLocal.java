import java.lang.reflect.Field;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * Amazon DynamoDB Local, listening on 127.0.0.1 only.
 *
 * <p>DynamoDBLocal.jar's command line has no bind-address option and its Jetty server listens on every interface.
 * This launcher builds the server from the same command line, swaps its one connector for a loopback one on the same
 * port, and starts it. Run in Java's single-file source mode with DynamoDBLocal.jar and its lib on the classpath.
 */
public final class LoopbackDynamoDBLocal {
    private LoopbackDynamoDBLocal() {}

    public static void main(String[] args) throws Exception {
        DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
        if (proxy == null) {
            return; // -help or -version was asked for
        }
        Field field = DynamoDBProxyServer.class.getDeclaredField("server");
        field.setAccessible(true);
        Server server = (Server) field.get(proxy);
        int port = ((ServerConnector) server.getConnectors()[0]).getPort();
        ServerConnector loopback = new ServerConnector(server);
        loopback.setHost("127.0.0.1");
        loopback.setPort(port);
        server.setConnectors(new Connector[] {loopback});
        proxy.start();
        proxy.join();
    }
}
