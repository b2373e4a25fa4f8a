// A hot-swap lives in memory only: the server says at start which file each model starts from
// and that an earlier swap was not kept, and at a swap to another file that this version is not
// kept across a restart (README, "Model management").
#include "server/model_admin.hpp"
#include "server/server_process.hpp"

using namespace bitnet;

TEST_CASE("the log states the file each model starts from, and that a swap is not kept across a "
          "restart") {
    test::scratch_dir dir;
    test::server_process s;
    const auto start_log = s.log();
    CHECK(start_log.find("model 'tiny': starts from " + s.model_path() +
                         ", the configured file (a hot-swap or load made before a restart is "
                         "not kept)") != std::string::npos);
    CHECK(start_log.find("not kept across a restart") == std::string::npos);
    const auto b_path = test::make_model(dir, "b.gguf", "--seed 2");
    REQUIRE(test::load_and_wait(s, "tiny", b_path).at("state").as_string() == "ready");
    const auto log = s.log();
    CHECK(log.find("model 'tiny': this version is not kept across a restart, which "
                   "serves the configured " +
                   s.model_path()) != std::string::npos);
}
