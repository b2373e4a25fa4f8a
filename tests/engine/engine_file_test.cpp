// The engine owns every byte it reads after load: the model file can be truncated or rewritten
// on disk while the engine runs, with the same outputs (no SIGBUS, no other weights).
#include "engine_fixture.hpp"

#include <filesystem>

using namespace bitnet;
using namespace bitnet::test;

TEST_CASE("engine: outputs stay the same after its file is truncated or overwritten") {
    scratch_dir dir;
    for (const char* arch : {"bitnet-b1.58", "llama"}) {
        CAPTURE(arch);
        const std::string path = make_model(dir, arch, 5);
        auto eng = load_engine(path, 1);
        const std::vector<std::int32_t> prompt{1, 7, 42, 9, 300};
        const auto before = greedy_alone(*eng, 1, prompt, 8);
        const auto size = std::filesystem::file_size(path);
        std::filesystem::resize_file(path, 0);
        CHECK(greedy_alone(*eng, 2, prompt, 8) == before);
        write_file(path, std::vector<std::uint8_t>(size, 0xee));
        CHECK(greedy_alone(*eng, 3, prompt, 8) == before);
    }
}
