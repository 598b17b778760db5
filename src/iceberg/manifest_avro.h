// Manifest and manifest-list files as Avro object container files (Iceberg spec
// "Manifests", "Manifest Lists", Appendix A "Avro"; field ids and order as formats.md
// §C.5/§C.6 list them, the order Iceberg Java writes).
//
// Writers emit their Avro schema JSON themselves, so every `field-id`, `element-id` and
// `logicalType: map` attribute is in the file header. Readers decode with the writer
// schema found in the file and look fields up by name, so manifests from other
// implementations (v1 and v2) read too.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "iceberg/manifest.h"
#include "iceberg/partition_spec.h"
#include "iceberg/schema/schema.h"

namespace icestream::iceberg {

struct ManifestWriteOptions {
  bool deflate = true;  // Avro deflate codec (Java's default for metadata files)
  int deflate_level = 6;
};

// Writes one manifest (format v2). Accumulates the manifest-list summary while
// entries are added. Not thread-safe.
class ManifestWriter {
 public:
  // `schema` is the table schema written into the header; `spec` the manifest's
  // partition spec (its partition type comes from `schema`). `snapshot_id` is the
  // snapshot that adds this manifest (manifest_file.added_snapshot_id).
  static Result<std::unique_ptr<ManifestWriter>> Make(const Schema& schema, const PartitionSpec& spec,
                                                      ManifestContent content, int64_t snapshot_id,
                                                      ManifestWriteOptions options = {});
  ~ManifestWriter();

  // Adds an entry as given. ADDED entries written by this snapshot should leave the
  // sequence numbers unset (inherited at read time); EXISTING and DELETED entries must
  // carry both (spec "Sequence Number Inheritance"). Errors: kInvalidArgument for a
  // partition tuple that does not match the spec's type, a file content that does not
  // belong in this manifest, or an EXISTING/DELETED entry without sequence numbers.
  Status Add(const ManifestEntry& entry);
  // ADDED by this writer's snapshot.
  Status AddAdded(const DataFile& file);

  int64_t entry_count() const;

  // Finishes the file. *summary gets every manifest_file field except manifest_path
  // (the caller's) — sequence numbers stay kUnassignedSequenceNumber when the
  // manifest has ADDED entries with inherited numbers.
  Result<std::string> Finish(ManifestFile* summary);

  struct Impl;

 private:
  explicit ManifestWriter(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

// Writes a manifest list (format v2). Manifests with kUnassignedSequenceNumber get
// `sequence_number` (and their min_sequence_number likewise).
Result<std::string> WriteManifestList(int64_t snapshot_id, std::optional<int64_t> parent_snapshot_id,
                                      int64_t sequence_number, const std::vector<ManifestFile>& manifests,
                                      ManifestWriteOptions options = {});

struct ManifestContents {
  int format_version = 1;
  int32_t spec_id = 0;
  ManifestContent content = ManifestContent::kData;
  std::string schema_json;          // header "schema" (may be empty)
  std::string partition_spec_json;  // header "partition-spec" (may be empty)
  std::vector<ManifestEntry> entries;
};

// Reads a manifest. When `manifest` (its manifest-list entry) is given, inherited
// values are filled in: a null snapshot_id becomes added_snapshot_id, null sequence
// numbers of ADDED entries become the manifest's sequence_number, v1 entries get 0
// (spec "Sequence Number Inheritance"); data_file.spec_id is set from the header or
// the manifest-list entry. Partition values are typed from the Avro schema
// (logicalType date/time-micros/timestamp-micros/decimal/uuid).
// Errors: kCorruption for damaged Avro, kInvalidArgument for a file that is not a
// manifest (missing required fields).
Result<ManifestContents> ReadManifest(std::string_view bytes, const ManifestFile* manifest = nullptr);

// Reads a manifest list (v1 or v2; v1's missing fields read as the spec says: content
// data, sequence numbers 0).
Result<std::vector<ManifestFile>> ReadManifestList(std::string_view bytes);

// The Avro schema JSON Iceberg uses for a value of this type (Appendix A, "Avro"):
// optional fields become ["null", T] with default null, lists arrays with
// element-id, string-keyed maps Avro maps with key-id/value-id, other maps arrays of
// key/value records with logicalType map. Exposed for tests.
std::string AvroSchemaForStruct(const std::vector<NestedField>& fields, const std::string& record_name);

}  // namespace icestream::iceberg
