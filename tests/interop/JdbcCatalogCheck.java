// What a Java engine's Iceberg JDBC catalog does against the tables icestream created in
// PostgreSQL, with the real PostgreSQL JDBC driver (Debian's libpostgresql-jdbc-java):
// the schema-version detection (DatabaseMetaData.getColumns for iceberg_type, getTables
// for the namespace table), the V1 lookups and list statements, and commits — alternately
// with the V1 and the V0 pointer-swap statement — of new metadata files (the current one
// with one more table property), concurrently with icestream's own commits. Run by
// tests/interop/test_jdbc_catalog.py; prints one JSON line.
//
// The statements are those of Apache Iceberg's JdbcUtil (V0 and V1), bound as it binds
// them; a swap that updates 0 rows lost a race (Iceberg's CommitFailedException).
//
// Usage: java -cp postgresql.jar JdbcCatalogCheck.java URL CATALOG NAMESPACE TABLE COMMITS

import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.UUID;

public class JdbcCatalogCheck {
  static final String GET_TABLE_V1 =
      "SELECT * FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? "
          + "AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
  static final String LIST_TABLES_V1 =
      "SELECT * FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? "
          + "AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
  static final String LIST_NAMESPACES =
      "SELECT DISTINCT table_namespace FROM iceberg_tables WHERE catalog_name = ?";
  static final String GET_NAMESPACE_PROPERTIES =
      "SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ?";
  static final String COMMIT_V1 =
      "UPDATE iceberg_tables SET metadata_location = ? , previous_metadata_location = ? "
          + "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ? "
          + "AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
  static final String COMMIT_V0 =
      "UPDATE iceberg_tables SET metadata_location = ? , previous_metadata_location = ? "
          + "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?";

  public static void main(String[] args) throws Exception {
    String url = args[0], catalog = args[1], ns = args[2], table = args[3];
    int wanted = Integer.parseInt(args[4]);
    try (Connection c = DriverManager.getConnection(url)) {
      DatabaseMetaData md = c.getMetaData();
      boolean v1;
      try (ResultSet rs = md.getColumns(null, null, "iceberg_tables", "iceberg_type")) {
        v1 = rs.next();
      }
      boolean nsTable;
      try (ResultSet rs = md.getTables(null, null, "iceberg_namespace_properties", null)) {
        nsTable = rs.next();
      }
      int listed = 0;
      try (PreparedStatement ps = c.prepareStatement(LIST_TABLES_V1)) {
        ps.setString(1, catalog);
        ps.setString(2, ns);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) listed++;
        }
      }
      boolean nsListed = false;
      try (PreparedStatement ps = c.prepareStatement(LIST_NAMESPACES)) {
        ps.setString(1, catalog);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) nsListed |= ns.equals(rs.getString(1));
        }
      }
      boolean nsProps = false;
      try (PreparedStatement ps = c.prepareStatement(GET_NAMESPACE_PROPERTIES)) {
        ps.setString(1, catalog);
        ps.setString(2, ns);
        try (ResultSet rs = ps.executeQuery()) {
          nsProps = rs.next();
        }
      }
      int commits = 0, conflicts = 0, v0Commits = 0, attempts = 0;
      String last = null;
      while (commits < wanted && attempts < wanted * 50) {
        attempts++;
        String current;
        try (PreparedStatement ps = c.prepareStatement(GET_TABLE_V1)) {
          ps.setString(1, catalog);
          ps.setString(2, ns);
          ps.setString(3, table);
          try (ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) throw new IllegalStateException("table not found: " + ns + "." + table);
            current = rs.getString("metadata_location");
          }
        }
        String next = writeNext(current, commits);
        boolean useV0 = commits % 2 == 1;
        try (PreparedStatement ps = c.prepareStatement(useV0 ? COMMIT_V0 : COMMIT_V1)) {
          ps.setString(1, next);
          ps.setString(2, current);
          ps.setString(3, catalog);
          ps.setString(4, ns);
          ps.setString(5, table);
          ps.setString(6, current);
          int n = ps.executeUpdate();
          if (n == 1) {
            commits++;
            if (useV0) v0Commits++;
            last = next;
          } else {
            conflicts++;
            Files.deleteIfExists(pathOf(next));
          }
        }
        Thread.sleep(150);
      }
      System.out.println(String.format(
          "{\"v1\": %b, \"namespace_table\": %b, \"listed\": %d, \"namespace_listed\": %b, "
              + "\"namespace_properties\": %b, \"commits\": %d, \"v0_commits\": %d, \"conflicts\": %d, "
              + "\"last\": \"%s\"}",
          v1, nsTable, listed, nsListed, nsProps, commits, v0Commits, conflicts, last));
    }
  }

  static Path pathOf(String location) {
    if (!location.startsWith("file://")) {
      throw new IllegalArgumentException("this check reads local warehouses only: " + location);
    }
    return Paths.get(location.substring("file://".length()));
  }

  // The current metadata with one more table property and a later last-updated-ms, written
  // as the next metadata file beside it (what a property update of a Java engine commits).
  static String writeNext(String current, int n) throws Exception {
    Path cur = pathOf(current);
    String json = new String(Files.readAllBytes(cur), StandardCharsets.UTF_8);
    // An earlier commit of this check left its property: drop it, then add the new value.
    json = json.replaceAll(",\"jdbc\\.java\\.commit\":\"\\d+\"", "")
        .replaceAll("\"jdbc\\.java\\.commit\":\"\\d+\",?", "");
    int at = json.indexOf("\"properties\":{");
    if (at < 0) throw new IllegalStateException("no properties object in " + current);
    at += "\"properties\":{".length();
    boolean empty = json.charAt(at) == '}';
    String prop = "\"jdbc.java.commit\":\"" + n + "\"" + (empty ? "" : ",");
    String out = json.substring(0, at) + prop + json.substring(at);
    out = out.replaceFirst("\"last-updated-ms\":\\d+", "\"last-updated-ms\":" + System.currentTimeMillis());
    String name = cur.getFileName().toString();
    int version = Integer.parseInt(name.substring(0, name.indexOf('-')));
    Path next = cur.resolveSibling(String.format("%05d-%s.metadata.json", version + 1, UUID.randomUUID()));
    Files.write(next, out.getBytes(StandardCharsets.UTF_8));
    return "file://" + next.toString();
  }
}
