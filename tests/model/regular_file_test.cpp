// Reading model files for a load: only regular files open, reads and identity checks notice a file
// that changed since its open, file_image and the GGUF reader never echo a foreign file's bytes,
// and a cancel flag ends a long read.
#include "model/gguf/regular_file.hpp"

#include "model/gguf/file_digest.hpp"
#include "model/gguf/file_image.hpp"
#include "model/gguf/gguf_reader.hpp"
#include "support/test_data.hpp"

#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>

#include <sys/stat.h>

using namespace bitnet;
using namespace bitnet::model;

namespace {

bool contains(const std::string& s, const std::string& part) {
    return s.find(part) != std::string::npos;
}

std::string copy_fixture(const test::scratch_dir& dir, const std::string& name) {
    const auto path = dir.file(name);
    test::write_file(path, test::read_file(test::data_path("bitnetcpp/tiny-i2_s.gguf")));
    return path;
}

} // namespace

TEST_CASE("regular_file refuses what is not a regular file, and paths with a NUL byte") {
    test::scratch_dir dir;
    const auto fifo = dir.file("f.fifo");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0); // opening it must not wait for a writer
    std::filesystem::create_directory(dir.file("d"));
    const std::vector<std::pair<std::string, std::string>> cases{
        {fifo, "a FIFO"}, {dir.file("d"), "a directory"}, {"/dev/zero", "a character device"}};
    for (const auto& [path, kind] : cases) {
        CAPTURE(path);
        auto f = regular_file::open(path);
        REQUIRE(!f);
        CHECK(contains(f.error().message, "not a regular file"));
        CHECK(contains(f.error().message, kind));
    }
    auto nul = regular_file::open(copy_fixture(dir, "m.gguf") + std::string(1, '\0') + "x");
    REQUIRE(!nul);
    CHECK(nul.error().value() == errc::invalid_argument);
    CHECK(!regular_file::open(dir.file("missing")));
}

TEST_CASE("regular_file tells a file truncated, overwritten or replaced since its open") {
    test::scratch_dir dir;
    const auto path = copy_fixture(dir, "m.gguf");
    const auto bytes = test::read_file(path);
    {
        auto f = regular_file::open(path).value();
        CHECK(f.size() == bytes.size());
        CHECK(f.check_unchanged());
        std::filesystem::resize_file(path, bytes.size() / 2);
        std::vector<std::uint8_t> tail(64);
        auto r = f.read_at(bytes.size() - 64, tail);
        REQUIRE(!r);
        CHECK(contains(r.error().message, "changed while it was being loaded"));
        CHECK(!f.check_unchanged());
    }
    {
        test::write_file(path, bytes);
        auto f = regular_file::open(path).value();
        std::vector<std::uint8_t> other(bytes.size(), 0x5a); // same size, same inode
        std::fstream(path, std::ios::in | std::ios::out | std::ios::binary)
            .write(reinterpret_cast<const char*>(other.data()), 16);
        // mtime granularity may hide a write in the same tick; ctime/mtime are compared in ns,
        // and a size-preserving write still changes them on every Linux filesystem we run on.
        CHECK(!f.check_unchanged());
    }
    {
        test::write_file(path, bytes);
        auto f = regular_file::open(path).value();
        const auto other = dir.file("other.gguf");
        test::write_file(other, bytes);
        std::filesystem::rename(other, path); // `mv new.gguf served.gguf`
        auto r = f.check_unchanged();
        REQUIRE(!r);
        CHECK(contains(r.error().message, "another file"));
    }
}

TEST_CASE("file_image holds its own copy: truncating the file leaves its bytes readable") {
    test::scratch_dir dir;
    const auto path = copy_fixture(dir, "m.gguf");
    const auto bytes = test::read_file(path);
    auto f = regular_file::open(path).value();
    auto image = file_image::read(f, f.size()).value();
    std::filesystem::resize_file(path, 0);
    REQUIRE(image->bytes().size() == bytes.size());
    CHECK(std::equal(bytes.begin(), bytes.end(), image->bytes().begin()));
}

TEST_CASE("a cancel flag ends hashing and reading") {
    test::scratch_dir dir;
    const auto path = copy_fixture(dir, "m.gguf");
    cancel_flag cancel{true};
    auto d = sha256_file(path, &cancel);
    REQUIRE(!d);
    CHECK(d.error().value() == errc::cancelled);
    auto g = gguf_file::open(path, {}, &cancel);
    REQUIRE(!g);
    CHECK(g.error().value() == errc::cancelled);
    cancel = false;
    CHECK(sha256_file(path, &cancel));
}

TEST_CASE("a file that is not GGUF is refused without quoting its bytes") {
    test::scratch_dir dir;
    const auto path = dir.file("secret.txt");
    const std::string text = "Zq9!secret-first-line\nroot:x:0:0:root:/root:/bin/bash\n";
    test::write_file(path, {text.begin(), text.end()});
    auto g = gguf_file::open(path);
    REQUIRE(!g);
    CHECK(contains(g.error().message, "not a GGUF file"));
    CHECK(!contains(g.error().message, "Zq9"));
    auto f = regular_file::open(path).value();
    auto m = check_gguf_magic(f);
    REQUIRE(!m);
    CHECK(!contains(m.error().message, "Zq9"));
    auto short_file = dir.file("short.txt");
    test::write_file(short_file, {'Z', 'q', '9'});
    auto s = check_gguf_magic(regular_file::open(short_file).value());
    REQUIRE(!s);
    CHECK(contains(s.error().message, "not a GGUF file"));
}

TEST_CASE("open_metadata reads the metadata and tensor table, not the weights") {
    test::scratch_dir dir;
    const auto path = copy_fixture(dir, "m.gguf");
    auto whole = gguf_file::open(path).value();
    auto meta = gguf_file::open_metadata(path).value();
    CHECK(meta.file_size() == whole.file_size());
    CHECK(meta.data_offset() == whole.data_offset());
    CHECK(meta.metadata().size() == whole.metadata().size());
    REQUIRE(meta.tensors().size() == whole.tensors().size());
    for (std::size_t i = 0; i < meta.tensors().size(); ++i) {
        CHECK(meta.tensors()[i].name == whole.tensors()[i].name);
        CHECK(meta.tensors()[i].n_bytes == whole.tensors()[i].n_bytes);
        CHECK(whole.tensors()[i].data != nullptr);
    }
    CHECK(meta.get_string("general.architecture").value() ==
          whole.get_string("general.architecture").value());
}
