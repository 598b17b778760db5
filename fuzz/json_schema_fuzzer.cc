// Fuzzes the JSON Schema -> Iceberg mapping (schemas come from the registry, i.e. from
// users). Whatever maps must be a valid Iceberg schema that Parquet can hold and that
// the converter accepts, and must survive the Iceberg JSON round trip.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "format/parquet/file_writer.h"
#include "format/parquet/output_stream.h"
#include "iceberg/schema/schema_json.h"
#include "schema/json_schema.h"
#include "schema/record_converter.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace icestream;
  std::string text(reinterpret_cast<const char*>(data), size);
  auto mapped = schema::JsonSchemaToIceberg(text);
  if (!mapped.ok()) return 0;
  if (!iceberg::Validate(mapped->schema).ok()) std::abort();
  auto again = iceberg::SchemaFromJson(iceberg::SchemaToJson(mapped->schema));
  if (!again.ok() || !(*again == mapped->schema)) std::abort();
  std::string file;
  format::parquet::StringOutputStream sink(&file);
  auto writer = format::parquet::FileWriter::Make(mapped->schema, &sink, {});
  if (!writer.ok()) std::abort();
  auto converter = schema::RecordConverter::Make(*mapped, writer->get());
  if (!converter.ok()) std::abort();
  schema::RecordError error;
  (void)(*converter)->Convert("{}", &error);
  if (!(*writer)->Close().ok()) std::abort();
  return 0;
}
