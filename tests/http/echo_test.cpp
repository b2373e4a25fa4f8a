// Completions `echo` (prompt logprobs for evaluation harnesses): what the parser accepts and
// refuses, and the prompt's logprobs columns in OpenAI's legacy shape (first token null).
#include "http/api_json.hpp"
#include "http/openai/echo_render.hpp"

#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::http;

namespace {
api_error error_of(std::string_view body, api_family kind) {
    auto r = parse_inference(body, kind);
    REQUIRE(std::holds_alternative<api_error>(r));
    return std::get<api_error>(r);
}
inference_input ok(std::string_view body, api_family kind) {
    auto r = parse_inference(body, kind);
    if (auto* e = std::get_if<api_error>(&r))
        FAIL(e->message);
    return std::get<inference_input>(r);
}
} // namespace

TEST_CASE("echo: max_tokens 0 only with echo on completions, echo refused elsewhere") {
    constexpr auto cmpl = api_family::completions;
    // What lm-evaluation-harness's local-completions sends for loglikelihood requests.
    auto in = ok(R"({"model":"tiny","prompt":[[1,2,3]],"max_tokens":0,"temperature":0,
                    "logprobs":1,"echo":true,"seed":1234})",
                 cmpl);
    CHECK(in.echo);
    CHECK(in.max_tokens == 0);
    CHECK(in.want_logprobs);
    CHECK(in.params.n_logprobs == 1);
    CHECK(in.prompt_is_ids);
    CHECK(in.prompt_ids == std::vector<msg::token_id>{1, 2, 3});
    CHECK(ok(R"({"prompt":["hi"],"echo":true,"max_completion_tokens":0})", cmpl).prompt_text ==
          "hi");
    CHECK(ok(R"({"prompt":"hi","echo":false,"max_tokens":3})", cmpl).echo == false);

    // Without echo, 0 stays refused, and the message says where 0 is allowed.
    auto e = error_of(R"({"prompt":"hi","max_tokens":0})", cmpl);
    CHECK(e.param == "max_tokens");
    CHECK(e.message.find("echo") != std::string::npos);
    CHECK(error_of(R"({"prompt":"hi","max_completion_tokens":0})", cmpl).param ==
          "max_completion_tokens");
    CHECK(error_of(R"({"prompt":"hi","max_tokens":0})", api_family::native).param == "max_tokens");
    // echo is a completions field: chat and native refuse it rather than ignore it.
    e = error_of(R"({"messages":[{"role":"user","content":"hi"}],"echo":true})", api_family::chat);
    CHECK(e.param == "echo");
    CHECK(e.message.find("/v1/completions") != std::string::npos);
    CHECK(error_of(R"({"prompt":"hi","echo":true})", api_family::native).param == "echo");
    CHECK(error_of(R"({"prompt":"hi","echo":"yes"})", cmpl).param == "echo");
    // logprobs beyond 20 and a negative max_tokens stay refused with echo.
    CHECK(error_of(R"({"prompt":"hi","echo":true,"logprobs":21})", cmpl).param == "logprobs");
    CHECK(error_of(R"({"prompt":"hi","echo":true,"max_tokens":-1})", cmpl).param == "max_tokens");
}

TEST_CASE("echo: a list of one prompt is that prompt, a list of several gets a clear 400") {
    constexpr auto cmpl = api_family::completions;
    auto e = error_of(R"({"prompt":[[1,2],[3,4]],"echo":true,"max_tokens":0})", cmpl);
    CHECK(e.param == "prompt");
    CHECK(e.message.find("2 prompts") != std::string::npos);
    CHECK(e.message.find("batch_size=1") != std::string::npos);
    CHECK(error_of(R"({"prompt":["a","b"]})", cmpl).param == "prompt");
    CHECK(error_of(R"({"prompt":[[]]})", cmpl).param == "prompt");
    CHECK(error_of(R"({"prompt":[""]})", cmpl).param == "prompt");
    CHECK(error_of(R"({"prompt":[[1,-2]]})", cmpl).param == "prompt");
    CHECK(error_of(R"({"prompt":[1,[2]]})", cmpl).param == "prompt");
}

TEST_CASE("echo columns: the first token null, then each token's logprob and alternatives") {
    msg::prompt_echo e;
    e.tokens = {1, 2, 3};
    e.pieces = {"<s>", "Hi", "\xC3"}; // the last: half a character
    e.text = "Hi!";
    e.text_offsets = {0, 0, 2};
    e.logprobs = {-1.5f, -0.25f};
    e.n_top = 2;
    e.top_tokens = {2, 5, 7, 8};
    e.top_logprobs = {-1.5f, -2.0f, -0.25f, -3.0f};
    e.top_pieces = {"Hi", "Yo", "x", "x"}; // two alternatives with one piece: the likelier wins
    const auto cols = completion_echo_columns(e);
    CHECK(cols[0] == std::vector<std::string>{R"("<s>")", R"("Hi")", "\"\xEF\xBF\xBD\""});
    CHECK(cols[1] == std::vector<std::string>{"null", "-1.500000", "-0.250000"});
    CHECK(cols[2] == std::vector<std::string>{"null", R"({"Hi":-1.500000,"Yo":-2.000000})",
                                              R"({"x":-0.250000})"});
    CHECK(cols[3] == std::vector<std::string>{"0", "0", "2"});

    // Echo without logprobs has no scores: every entry null.
    msg::prompt_echo bare;
    bare.tokens = {1, 2};
    bare.pieces = {"a", "b"};
    bare.text_offsets = {0, 1};
    const auto b = completion_echo_columns(bare);
    CHECK(b[1] == std::vector<std::string>{"null", "null"});
}
