// What a Java engine's Iceberg JDBC catalog does against the tables icestream created in
// PostgreSQL, with the real PostgreSQL JDBC driver (Debian's libpostgresql-jdbc-java). Run
// by tests/interop/test_jdbc_catalog.py in two modes:
//
//   commits URL CATALOG NAMESPACE TABLE COMMITS
//     the schema-version detection (DatabaseMetaData.getColumns for iceberg_type, getTables
//     for the namespace table), the list statements, and commits - alternately a V1 engine's
//     (V1 get, V1 pointer swap) and a V0 engine's (V0 get, V0 swap) - of new metadata files
//     (the current one with one more table property), concurrently with icestream's own
//     commits; prints one JSON line.
//
//   statements URL CATALOG
//     reads commands from stdin, one a line, words separated by tabs, runs each as the
//     JdbcCatalog operation of the same name does, and prints one JSON line per command:
//     {"updated": n} for a change, {"rows": [{column: value}]} for a query, {"sqlstate": s}
//     when PostgreSQL refuses the statement. Commands (NS: a namespace, dotted):
//       get_v0|get_v1 NS TABLE            loadTable / tableExists
//       list_v0|list_v1 NS                listTables
//       create_v0|create_v1 NS TABLE LOC  the create commit (the metadata file LOC exists)
//       rename_v0|rename_v1 NS TABLE NS2 TABLE2
//       drop_v0|drop_v1 NS TABLE          dropTable
//       namespace_exists NS               namespaceExists: {"tables": b, "properties": b}
//       list_namespaces [PREFIX]          listNamespaces: {"tables": [...], "properties": [...]}
//       properties NS                     fetchProperties (the rows)
//       insert_properties NS K V [K V..]  createNamespace / setProperties of new keys
//       update_properties NS K V [K V..]  setProperties of existing keys
//       delete_properties NS K [K..]      removeProperties
//       drop_namespace NS                 dropNamespace
//
// The statements are those of Apache Iceberg's JdbcUtil (core/.../jdbc/JdbcUtil.java, V0 and
// V1; the reference's Part two, section 1), string constants evaluated, bound as JdbcCatalog
// and JdbcUtil bind them; a swap that updates 0 rows lost a race (CommitFailedException).

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.sql.Connection;
import java.sql.DatabaseMetaData;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.ResultSetMetaData;
import java.sql.SQLException;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.UUID;

public class JdbcCatalogCheck {
  // Tables (JdbcUtil: V1_/V0_GET_TABLE_SQL, V1_/V0_LIST_TABLE_SQL, V1_DO_COMMIT_TABLE_SQL,
  // V0_DO_COMMIT_SQL, V1_/V0_DO_COMMIT_CREATE_SQL, V1_/V0_RENAME_TABLE_SQL,
  // V1_/V0_DROP_TABLE_SQL). The doubled spaces are Iceberg's.
  static final String GET_TABLE_V1 =
      "SELECT * FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? "
          + "AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
  static final String GET_TABLE_V0 =
      "SELECT * FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? AND table_name = ?";
  static final String LIST_TABLES_V1 =
      "SELECT * FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ? "
          + "AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
  static final String LIST_TABLES_V0 =
      "SELECT * FROM iceberg_tables WHERE catalog_name = ? AND table_namespace = ?";
  static final String COMMIT_V1 =
      "UPDATE iceberg_tables SET metadata_location = ? , previous_metadata_location = ? "
          + "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ? "
          + "AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
  static final String COMMIT_V0 =
      "UPDATE iceberg_tables SET metadata_location = ? , previous_metadata_location = ? "
          + "WHERE catalog_name = ? AND table_namespace = ? AND table_name = ? AND metadata_location = ?";
  static final String CREATE_V1 =
      "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, "
          + "previous_metadata_location, iceberg_type)  VALUES (?,?,?,?,null,?)";
  static final String CREATE_V0 =
      "INSERT INTO iceberg_tables (catalog_name, table_namespace, table_name, metadata_location, "
          + "previous_metadata_location)  VALUES (?,?,?,?,null)";
  static final String RENAME_V1 =
      "UPDATE iceberg_tables SET table_namespace = ?, table_name = ? WHERE catalog_name = ? "
          + "AND table_namespace = ? AND table_name = ? AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
  static final String RENAME_V0 =
      "UPDATE iceberg_tables SET table_namespace = ?, table_name = ? WHERE catalog_name = ? "
          + "AND table_namespace = ? AND table_name = ?";
  static final String DROP_V1 =
      "DELETE FROM iceberg_tables WHERE catalog_name = ? AND table_namespace  = ? AND table_name = ? "
          + "AND (iceberg_type = 'TABLE' OR iceberg_type IS NULL)";
  static final String DROP_V0 =
      "DELETE FROM iceberg_tables WHERE catalog_name = ? AND table_namespace  = ? AND table_name = ?";
  // Namespaces (JdbcUtil: GET_NAMESPACE_SQL, LIST_NAMESPACES_SQL, LIST_ALL_NAMESPACES_SQL,
  // GET_NAMESPACE_PROPERTIES_SQL, INSERT_NAMESPACE_PROPERTIES_SQL + INSERT_PROPERTIES_VALUES_BASE,
  // GET_ALL_NAMESPACE_PROPERTIES_SQL, DELETE_NAMESPACE_PROPERTIES_SQL,
  // DELETE_ALL_NAMESPACE_PROPERTIES_SQL, LIST_PROPERTY_NAMESPACES_SQL,
  // LIST_ALL_PROPERTY_NAMESPACES_SQL, updatePropertiesStatement).
  static final String GET_NAMESPACE =
      "SELECT table_namespace FROM iceberg_tables WHERE catalog_name = ? AND  (table_namespace = ? "
          + "OR table_namespace LIKE ? ESCAPE '!') LIMIT 1";
  static final String LIST_NAMESPACES =
      "SELECT DISTINCT table_namespace FROM iceberg_tables WHERE catalog_name = ? AND table_namespace LIKE ?";
  static final String LIST_ALL_NAMESPACES =
      "SELECT DISTINCT table_namespace FROM iceberg_tables WHERE catalog_name = ?";
  static final String GET_NAMESPACE_PROPERTIES =
      "SELECT namespace FROM iceberg_namespace_properties WHERE catalog_name = ? AND  ( namespace = ? "
          + "OR namespace LIKE ? ESCAPE '!'  ) ";
  static final String INSERT_NAMESPACE_PROPERTIES =
      "INSERT INTO iceberg_namespace_properties (catalog_name, namespace, property_key, property_value) VALUES ";
  static final String INSERT_PROPERTIES_VALUES_BASE = "(?,?,?,?)";
  static final String GET_ALL_NAMESPACE_PROPERTIES =
      "SELECT *  FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ? ";
  static final String DELETE_NAMESPACE_PROPERTIES =
      "DELETE FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ? AND property_key IN ";
  static final String DELETE_ALL_NAMESPACE_PROPERTIES =
      "DELETE FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace = ?";
  static final String LIST_PROPERTY_NAMESPACES =
      "SELECT DISTINCT namespace FROM iceberg_namespace_properties WHERE catalog_name = ? AND namespace LIKE ?";
  static final String LIST_ALL_PROPERTY_NAMESPACES =
      "SELECT DISTINCT namespace FROM iceberg_namespace_properties WHERE catalog_name = ?";

  static String updatePropertiesStatement(int size) {
    StringBuilder sql = new StringBuilder("UPDATE iceberg_namespace_properties SET property_value = CASE");
    for (int i = 0; i < size; i++) sql.append(" WHEN property_key = ? THEN ?");
    sql.append(" END WHERE catalog_name = ? AND namespace = ? AND property_key IN ");
    return sql.append("(").append(String.join(",", Collections.nCopies(size, "?"))).append(")").toString();
  }

  static String insertPropertiesStatement(int size) {
    StringBuilder sql = new StringBuilder(INSERT_NAMESPACE_PROPERTIES);
    for (int i = 0; i < size; i++) {
      if (i != 0) sql.append(", ");
      sql.append(INSERT_PROPERTIES_VALUES_BASE);
    }
    return sql.toString();
  }

  static String deletePropertiesStatement(int size) {
    return DELETE_NAMESPACE_PROPERTIES + "(" + String.join(",", Collections.nCopies(size, "?")) + ")";
  }

  public static void main(String[] args) throws Exception {
    if (args.length > 0 && args[0].equals("commits")) {
      commits(Arrays.copyOfRange(args, 1, args.length));
    } else if (args.length > 0 && args[0].equals("statements")) {
      statements(args[1], args[2]);
    } else {
      throw new IllegalArgumentException("usage: JdbcCatalogCheck.java commits|statements ...");
    }
  }

  static void commits(String[] args) throws Exception {
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
      try (PreparedStatement ps = c.prepareStatement(LIST_ALL_NAMESPACES)) {
        ps.setString(1, catalog);
        try (ResultSet rs = ps.executeQuery()) {
          while (rs.next()) nsListed |= ns.equals(rs.getString(1));
        }
      }
      boolean nsProps = !query(c, GET_NAMESPACE_PROPERTIES, catalog, ns, likePrefix(ns)).isEmpty();
      int commits = 0, conflicts = 0, v0Commits = 0, attempts = 0;
      String last = null;
      while (commits < wanted && attempts < wanted * 50) {
        attempts++;
        boolean useV0 = commits % 2 == 1;
        String current;
        try (PreparedStatement ps = c.prepareStatement(useV0 ? GET_TABLE_V0 : GET_TABLE_V1)) {
          ps.setString(1, catalog);
          ps.setString(2, ns);
          ps.setString(3, table);
          try (ResultSet rs = ps.executeQuery()) {
            if (!rs.next()) throw new IllegalStateException("table not found: " + ns + "." + table);
            current = rs.getString("metadata_location");
          }
        }
        String next = writeNext(current, commits);
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

  // namespaceExists' LIKE argument for the namespaces under NS (JdbcUtil.namespaceExists).
  static String likePrefix(String ns) {
    return ns.replace("!", "!!").replace("_", "!_").replace("%", "!%") + ".%";
  }

  static List<Map<String, String>> query(Connection c, String sql, String... binds) throws SQLException {
    List<Map<String, String>> rows = new ArrayList<>();
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < binds.length; i++) ps.setString(i + 1, binds[i]);
      try (ResultSet rs = ps.executeQuery()) {
        ResultSetMetaData md = rs.getMetaData();
        while (rs.next()) {
          Map<String, String> row = new LinkedHashMap<>();
          for (int i = 1; i <= md.getColumnCount(); i++) row.put(md.getColumnName(i), rs.getString(i));
          rows.add(row);
        }
      }
    }
    return rows;
  }

  static int update(Connection c, String sql, String... binds) throws SQLException {
    try (PreparedStatement ps = c.prepareStatement(sql)) {
      for (int i = 0; i < binds.length; i++) ps.setString(i + 1, binds[i]);
      return ps.executeUpdate();
    }
  }

  static List<String> column(List<Map<String, String>> rows, String name) {
    List<String> out = new ArrayList<>();
    for (Map<String, String> r : rows) out.add(r.get(name));
    return out;
  }

  static void statements(String url, String catalog) throws Exception {
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    try (Connection c = DriverManager.getConnection(url)) {
      String line;
      while ((line = in.readLine()) != null) {
        if (line.isEmpty()) continue;
        String[] w = line.split("\t", -1);
        String out;
        try {
          out = run(c, catalog, w);
        } catch (SQLException e) {
          out = "{\"sqlstate\": " + json(e.getSQLState()) + ", \"message\": " + json(e.getMessage()) + "}";
        }
        System.out.println(out);
        System.out.flush();
      }
    }
  }

  static String run(Connection c, String catalog, String[] w) throws SQLException {
    String[] rest = Arrays.copyOfRange(w, 1, w.length);
    switch (w[0]) {
      case "get_v0": return rows(query(c, GET_TABLE_V0, catalog, w[1], w[2]));
      case "get_v1": return rows(query(c, GET_TABLE_V1, catalog, w[1], w[2]));
      case "list_v0": return rows(query(c, LIST_TABLES_V0, catalog, w[1]));
      case "list_v1": return rows(query(c, LIST_TABLES_V1, catalog, w[1]));
      case "create_v0": return updated(update(c, CREATE_V0, catalog, w[1], w[2], w[3]));
      case "create_v1": return updated(update(c, CREATE_V1, catalog, w[1], w[2], w[3], "TABLE"));
      // binds: new namespace, new name, catalog, old namespace, old name
      case "rename_v0": return updated(update(c, RENAME_V0, w[3], w[4], catalog, w[1], w[2]));
      case "rename_v1": return updated(update(c, RENAME_V1, w[3], w[4], catalog, w[1], w[2]));
      case "drop_v0": return updated(update(c, DROP_V0, catalog, w[1], w[2]));
      case "drop_v1": return updated(update(c, DROP_V1, catalog, w[1], w[2]));
      case "namespace_exists":
        return "{\"tables\": " + !query(c, GET_NAMESPACE, catalog, w[1], likePrefix(w[1])).isEmpty()
            + ", \"properties\": " + !query(c, GET_NAMESPACE_PROPERTIES, catalog, w[1], likePrefix(w[1])).isEmpty()
            + "}";
      case "list_namespaces": {
        List<String> tables = w.length > 1
            ? column(query(c, LIST_NAMESPACES, catalog, w[1] + "%"), "table_namespace")
            : column(query(c, LIST_ALL_NAMESPACES, catalog), "table_namespace");
        List<String> props = w.length > 1
            ? column(query(c, LIST_PROPERTY_NAMESPACES, catalog, w[1] + "%"), "namespace")
            : column(query(c, LIST_ALL_PROPERTY_NAMESPACES, catalog), "namespace");
        return "{\"tables\": " + strings(tables) + ", \"properties\": " + strings(props) + "}";
      }
      case "properties": return rows(query(c, GET_ALL_NAMESPACE_PROPERTIES, catalog, w[1]));
      case "insert_properties": {
        // binds: (catalog, namespace, key, value) per property
        List<String> b = new ArrayList<>();
        for (int i = 1; i + 1 < rest.length; i += 2) b.addAll(List.of(catalog, w[1], rest[i], rest[i + 1]));
        return updated(update(c, insertPropertiesStatement(b.size() / 4), b.toArray(new String[0])));
      }
      case "update_properties": {
        // binds: key, value per property; catalog, namespace; the keys
        List<String> b = new ArrayList<>(), keys = new ArrayList<>();
        for (int i = 1; i + 1 < rest.length; i += 2) {
          b.addAll(List.of(rest[i], rest[i + 1]));
          keys.add(rest[i]);
        }
        b.addAll(List.of(catalog, w[1]));
        b.addAll(keys);
        return updated(update(c, updatePropertiesStatement(keys.size()), b.toArray(new String[0])));
      }
      case "delete_properties": {
        List<String> b = new ArrayList<>(List.of(catalog, w[1]));
        b.addAll(Arrays.asList(rest).subList(1, rest.length));
        return updated(update(c, deletePropertiesStatement(rest.length - 1), b.toArray(new String[0])));
      }
      case "drop_namespace": return updated(update(c, DELETE_ALL_NAMESPACE_PROPERTIES, catalog, w[1]));
      default: throw new IllegalArgumentException("unknown command " + w[0]);
    }
  }

  static String updated(int n) {
    return "{\"updated\": " + n + "}";
  }

  static String rows(List<Map<String, String>> rows) {
    StringBuilder sb = new StringBuilder("{\"rows\": [");
    for (int i = 0; i < rows.size(); i++) {
      if (i > 0) sb.append(", ");
      sb.append("{");
      int j = 0;
      for (Map.Entry<String, String> e : rows.get(i).entrySet()) {
        if (j++ > 0) sb.append(", ");
        sb.append(json(e.getKey())).append(": ").append(json(e.getValue()));
      }
      sb.append("}");
    }
    return sb.append("]}").toString();
  }

  static String strings(List<String> values) {
    StringBuilder sb = new StringBuilder("[");
    for (int i = 0; i < values.size(); i++) sb.append(i > 0 ? ", " : "").append(json(values.get(i)));
    return sb.append("]").toString();
  }

  static String json(String s) {
    if (s == null) return "null";
    StringBuilder sb = new StringBuilder("\"");
    for (char ch : s.toCharArray()) {
      if (ch == '"' || ch == '\\') sb.append('\\').append(ch);
      else if (ch < 0x20) sb.append(String.format("\\u%04x", (int) ch));
      else sb.append(ch);
    }
    return sb.append('"').toString();
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
