// Replay driver: runs a libFuzzer target over the files of its seed corpus (and any files
// or folders named on the command line) without libFuzzer, so ordinary builds keep every
// fuzz target compiling and its corpus passing. Real fuzzing uses the `fuzz` preset.
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

int main(int argc, char** argv) {
  std::vector<std::filesystem::path> files;
  for (int i = 1; i < argc; ++i) {
    std::filesystem::path p(argv[i]);
    if (std::filesystem::is_directory(p)) {
      for (const auto& e : std::filesystem::recursive_directory_iterator(p)) {
        if (e.is_regular_file()) files.push_back(e.path());
      }
    } else {
      files.push_back(p);
    }
  }
  for (const auto& f : files) {
    std::ifstream in(f, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size());
    // Every prefix too: truncated inputs are the commonest damage.
    for (size_t n = 0; n < bytes.size() && n < 4096; n += 1 + n / 16) {
      LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), n);
    }
  }
  std::printf("replayed %zu inputs\n", files.size());
  return 0;
}
