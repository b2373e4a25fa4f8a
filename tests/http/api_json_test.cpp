// Request validation and error bodies: what reaches an actor is always in range; every error has
// the contract's shape.
#include "http/api_json.hpp"

#include "http/errors.hpp"

#include <boost/json.hpp>
#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::http;

namespace {
api_error error_of(std::string_view body, api_family kind = api_family::native) {
    auto r = parse_inference(body, kind);
    REQUIRE(std::holds_alternative<api_error>(r));
    return std::get<api_error>(r);
}
inference_input ok(std::string_view body, api_family kind = api_family::native) {
    auto r = parse_inference(body, kind);
    if (auto* e = std::get_if<api_error>(&r))
        FAIL(e->message);
    return std::get<inference_input>(r);
}
} // namespace

TEST_CASE("native request: defaults and every field") {
    auto in = ok(R"({"prompt":"hi"})");
    CHECK(in.prompt_text == "hi");
    CHECK(in.max_tokens == 128);
    CHECK(in.prio == msg::priority::normal);
    in = ok(R"({"prompt":[1,2,3],"model":"tiny","max_tokens":7,"temperature":0,"top_k":5,
               "top_p":0.5,"min_p":0.1,"repetition_penalty":1.1,"seed":18446744073709551615,
               "stop":["a","b"],"stop_token_ids":[2],"priority":"high","timeout_ms":500,
               "logprobs":3,"add_bos":false,"token_logprob":false})");
    CHECK(in.prompt_is_ids);
    CHECK(in.prompt_ids == std::vector<msg::token_id>{1, 2, 3});
    CHECK(in.model == "tiny");
    CHECK(in.max_tokens == 7);
    CHECK(in.params.temperature == 0.0f);
    CHECK(in.params.top_k == 5);
    CHECK(in.params.seed == 18446744073709551615ull);
    CHECK(in.stop == std::vector<std::string>{"a", "b"});
    CHECK(in.prio == msg::priority::high);
    CHECK(in.timeout_ms == 500);
    CHECK(in.params.n_logprobs == 3);
    CHECK(in.want_logprobs);
    CHECK_FALSE(in.add_bos);
    CHECK_FALSE(in.token_logprob);
    CHECK(ok(R"({"prompt":"hi"})").token_logprob);
    // A field the route does not take is refused, not ignored (field_policy.hpp).
    const auto unknown = error_of(R"({"prompt":"hi","unknown_field":{"x":1}})");
    CHECK(unknown.param == "unknown_field");
    CHECK(unknown.code == "unknown_parameter");
}

TEST_CASE("validation names the field") {
    CHECK(error_of("{").message.find("not valid JSON") != std::string::npos);
    CHECK(error_of("[1]").status == 400);
    CHECK(error_of(R"({})").param == "prompt");
    CHECK(error_of(R"({"prompt":""})").param == "prompt");
    CHECK(error_of(R"({"prompt":[1,-2]})").param == "prompt");
    CHECK(error_of(R"({"prompt":"x","max_tokens":0})").param == "max_tokens");
    CHECK(error_of(R"({"prompt":"x","max_tokens":"5"})").param == "max_tokens");
    CHECK(error_of(R"({"prompt":"x","temperature":5.5})").param == "temperature");
    CHECK(error_of(R"({"prompt":"x","top_p":1.5})").param == "top_p");
    CHECK(error_of(R"({"prompt":"x","top_p":0})").param == "top_p");
    CHECK(error_of(R"({"prompt":"x","repetition_penalty":0})").param == "repetition_penalty");
    CHECK(error_of(R"({"prompt":"x","top_k":-1})").param == "top_k");
    CHECK(error_of(R"({"prompt":"x","min_p":2})").param == "min_p");
    CHECK(error_of(R"({"prompt":"x","logprobs":21})").param == "logprobs");
    CHECK(error_of(R"({"prompt":"x","priority":"urgent"})").param == "priority");
    CHECK(error_of(R"({"prompt":"x","stop":["1","2","3","4","5","6","7","8","9"]})").param ==
          "stop");
    CHECK(error_of(R"({"prompt":"x","seed":-1})").param == "seed");
    CHECK(error_of(R"({"prompt":"x","token_logprob":0})").param == "token_logprob");
    auto e = error_of(R"({"prompt":"x","temperature":"hot"})");
    CHECK(e.status == 400);
    CHECK(e.type == "invalid_request_error");
    CHECK(e.code == "invalid_value");
}

TEST_CASE("OpenAI chat and completions fields") {
    auto in = ok(R"({"model":"tiny","messages":[{"role":"system","content":"be brief"},
                    {"role":"user","content":"hi"}],"stream":true,
                    "stream_options":{"include_usage":true},"max_completion_tokens":9,
                    "logprobs":true,"top_logprobs":2,"n":1})",
                 api_family::chat);
    CHECK(in.stream);
    CHECK(in.include_usage);
    CHECK(in.max_tokens == 9);
    CHECK(in.params.n_logprobs == 2);
    CHECK(in.want_logprobs);
    REQUIRE(in.messages.size() == 2);
    CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"top_logprobs":2})",
                   api_family::chat)
              .param == "top_logprobs");
    CHECK(error_of(R"({"messages":[{"role":"user","content":"x"}],"logprobs":3})", api_family::chat)
              .param == "logprobs");
    CHECK(error_of(R"({"messages":[]})", api_family::chat).param == "messages");
    CHECK(error_of(R"({"messages":[{"role":"robot","content":"x"}]})", api_family::chat).param ==
          "messages");
    // n: 1..127 here (the server's max_n is checked by the session); native routes take 1 only.
    CHECK(ok(R"({"prompt":"x","n":2})", api_family::completions).n == 2);
    CHECK(ok(R"({"prompt":"x"})", api_family::completions).n == 1);
    CHECK(error_of(R"({"prompt":"x","n":0})", api_family::completions).param == "n");
    CHECK(error_of(R"({"prompt":"x","n":128})", api_family::completions).param == "n");
    CHECK(error_of(R"({"prompt":"x","n":2})", api_family::native).param == "n");
    CHECK(ok(R"({"prompt":"x","n":1})", api_family::native).n == 1);
    CHECK(ok(R"({"prompt":"x","stop":"\n"})", api_family::completions).stop.size() == 1);
}

TEST_CASE("errc maps to the status table with the contract's body") {
    CHECK(to_api_error({errc::invalid_argument, "x"}).status == 400);
    auto ctx = to_api_error({errc::prompt_too_long, "x"});
    CHECK(ctx.status == 400);
    CHECK(ctx.code == "context_length_exceeded");
    CHECK(ctx.param == "prompt"); // always the prompt's length that does not fit
    CHECK(ctx.retry_after_s == 0);
    // The field an error carries becomes `param`, unless the caller names one.
    CHECK(to_api_error({errc::invalid_argument, "x", "stop_token_ids"}).param == "stop_token_ids");
    CHECK(to_api_error({errc::invalid_argument, "x", "prompt"}, 0, "messages").param == "messages");
    auto nf = to_api_error({errc::not_found, "no model 'x'"});
    CHECK(nf.status == 404);
    CHECK(nf.code == "model_not_found");
    auto busy = to_api_error({errc::queue_full, "queue full"}, 7);
    CHECK(busy.status == 503);
    CHECK(busy.code == "queue_full");
    CHECK(busy.retry_after_s == 7);
    // Draining is its own code, told by the error's value, never by its wording.
    CHECK(to_api_error({errc::draining, "the server is shutting down"}).code == "draining");
    CHECK(to_api_error({errc::queue_full, "draining: a message that only says so"}).code ==
          "queue_full");
    auto quota = to_api_error({errc::quota_exceeded, "quota exceeded"}, 30);
    CHECK(quota.status == 429);
    CHECK(quota.type == "rate_limit_error");
    CHECK(quota.code == "rate_limit_exceeded");
    CHECK(quota.retry_after_s == 30);
    // A receiver that stopped before it answered (messages/errors.cpp: cancelled) is the
    // server's transient state, never the client's fault: 503 with a Retry-After, not a 500.
    auto gone = to_api_error({errc::cancelled, "the receiving actor is gone"});
    CHECK(gone.status == 503);
    CHECK(gone.type == "overloaded");
    CHECK(gone.code == "worker_stopped");
    CHECK(gone.retry_after_s == 1);
    CHECK(gone.message.find("stopped before it answered") != std::string::npos);
    CHECK(to_api_error({errc::timeout, "late"}).status == 504);
    CHECK(to_api_error({errc::internal, "bug"}).status == 500);

    auto body = boost::json::parse(error_body(busy, "req-1")).as_object();
    const auto& err = body.at("error").as_object();
    CHECK(err.at("message").as_string() == "queue full");
    CHECK(err.at("type").as_string() == "overloaded");
    CHECK(err.at("code").as_string() == "queue_full");
    CHECK(err.at("param").is_null());
    CHECK(err.at("request_id").as_string() == "req-1");
    CHECK_FALSE(err.at("suggestion").as_string().empty());
}

TEST_CASE("fixed prints plain decimals") {
    CHECK(fixed(0.25) == "0.250");
    CHECK(fixed(12.0, 1) == "12.0");
}
