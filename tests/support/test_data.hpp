// Paths of committed fixtures (tests/data) and scratch files for tests.
#pragma once

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

namespace bitnet::test {

inline std::string data_path(const std::string& rel) {
    return std::string(BITNET_TEST_DATA_DIR) + "/" + rel;
}

inline std::vector<std::uint8_t> read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

inline void write_file(const std::string& path, const std::vector<std::uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
}

/// A fresh directory under the system temp dir, removed when the object dies.
class scratch_dir {
public:
    scratch_dir() {
        std::string templ =
            (std::filesystem::temp_directory_path() / "bitnet-test-XXXXXX").string();
        path_ = ::mkdtemp(templ.data());
    }
    ~scratch_dir() {
        std::error_code ec;
        std::filesystem::remove_all(path_, ec);
    }
    scratch_dir(const scratch_dir&) = delete;
    scratch_dir& operator=(const scratch_dir&) = delete;
    [[nodiscard]] std::string file(const std::string& name) const { return path_ + "/" + name; }

private:
    std::string path_;
};

} // namespace bitnet::test
