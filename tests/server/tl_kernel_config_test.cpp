// bitnet.cpp's TL1/TL2 files of shapes its preset table does not list need the kernel_config.ini
// its code generator wrote (the layout's BM, BK and bm are in no GGUF key). The server takes it as
// `tl_kernel_config`; without it such a file fails its load, naming the tensor and the setting.
#include "server/model_admin.hpp"
#include "server/server_process.hpp"

using namespace bitnet;

namespace {

/// Starts the server on bitnet.cpp's tiny file of `format` (tl1 or tl2), with its ini or without.
test::server_process tl_server(const std::string& format, bool with_ini) {
    std::vector<std::string> args{
        "--model", test::data_path("bitnetcpp/tl/tiny-" + format + ".gguf"), "--devices", "cpu"};
    if (with_ini) {
        args.emplace_back("--tl-kernel-config");
        args.emplace_back(test::data_path("bitnetcpp/tl/kernel_config_" + format + ".ini"));
    }
    test::launch_options lo;
    lo.model_flag = false;
    return test::server_process(args, with_ini ? lo : test::ready_once_load_failed(lo));
}

} // namespace

TEST_CASE("tl_kernel_config: TL1 and TL2 files of unlisted shapes serve, with the same greedy "
          "tokens") {
    std::vector<std::string> answers;
    for (const std::string format : {"tl1", "tl2"}) {
        CAPTURE(format);
        auto s = tl_server(format, true);
        const auto alias = "tiny-" + format;
        const auto m = test::model(s, alias);
        CHECK(m.at("state").as_string() == "ready");
        auto r = s.post("/v1/inference", test::greedy(alias, "Hello there", 16));
        REQUIRE_MESSAGE(r.status == 200, r.body);
        const auto tokens = test::parse_object(r.body).at("tokens");
        CHECK(tokens.as_array().size() == 16);
        answers.push_back(boost::json::serialize(tokens));
    }
    // Both files hold the same weights: the engine test has each equal the F32 twin's output.
    CHECK(answers[0] == answers[1]);
}

TEST_CASE("tl_kernel_config: without it a TL2 file of an unlisted shape fails its load in words") {
    auto s = tl_server("tl2", false);
    const auto failure = std::string(test::model(s, "tiny-tl2").at("failure").as_string());
    CHECK(failure.find("blk.0.attn_q.weight") != std::string::npos);
    CHECK(failure.find("tl_kernel_config") != std::string::npos);
    CHECK(s.get("/health/ready").status == 503);
}
