// FileIO: Iceberg file locations (the URIs written into metadata) mapped onto the
// objects of one bucket of an ObjectStore — a local folder or an S3 bucket alike
// (ARCHITECTURE.md §5). A warehouse (one table bucket) is one FileIO.
//
// Thread-safe (the store is).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "common/status.h"
#include "objectstore/object_store.h"

namespace icestream::iceberg {

struct FileInfo {
  std::string location;
  uint64_t size = 0;
  int64_t last_modified_ms = 0;
};

class FileIO {
 public:
  // `store` must outlive the FileIO.
  FileIO(objectstore::ObjectStore* store, std::string bucket);

  // The location of the bucket itself ("file:///…/bucket" or "s3://bucket"), no
  // trailing slash; every location of this FileIO starts with it plus '/'.
  const std::string& root() const { return root_; }
  std::string Location(std::string_view key) const;
  // The object key of a location; kInvalidArgument when it is not in this bucket.
  Result<std::string> KeyOf(std::string_view location) const;

  Result<std::string> Read(std::string_view location) const;
  // `if_absent`: fail with kConflict when the object exists (metadata files).
  Status Write(std::string_view location, std::string_view data, bool if_absent = false) const;
  // Deleting a missing object is not an error.
  Status Delete(std::string_view location) const;
  // Objects whose location starts with `location_prefix`, in key order.
  Result<std::vector<FileInfo>> List(std::string_view location_prefix) const;

  objectstore::ObjectStore* store() const { return store_; }
  const std::string& bucket() const { return bucket_; }

 private:
  objectstore::ObjectStore* store_;
  std::string bucket_;
  std::string root_;
};

}  // namespace icestream::iceberg
