// Response rendering: the exact bytes of the SSE payloads and the pieces every body shares
// (clients and the integration tests read them byte for byte).
#include "http/api_render.hpp"

#include <doctest/doctest.h>

using namespace bitnet;
using namespace bitnet::http;

TEST_CASE("chat and completion chunks carry the request's id, created and model") {
    const chunk_head h{"req-7", 100, "m"};
    CHECK(chat_chunk(h, R"({"content":"hi"})", "null") ==
          R"({"id":"chatcmpl-7","object":"chat.completion.chunk","created":100,"model":"m",)"
          R"("system_fingerprint":"bitnet-serve","choices":[{"index":0,"delta":{"content":"hi"},)"
          R"("logprobs":null,"finish_reason":null}],"usage":null})");
    CHECK(completion_chunk(h, "a\"b", R"("stop")") ==
          R"({"id":"cmpl-7","object":"text_completion","created":100,"model":"m",)"
          R"("system_fingerprint":"bitnet-serve",)"
          R"("choices":[{"text":"a\"b","index":0,"logprobs":null,"finish_reason":"stop"}],)"
          R"("usage":null})");
}

TEST_CASE("native token events: held-back text has no id and no logprob, nor a token when the "
          "request turned logprobs off") {
    msg::token_event ev;
    ev.index = 0;
    ev.token = 5;
    ev.text = "a";
    ev.logprob = -0.5f;
    CHECK(native_token_event(ev, true) ==
          R"({"index":0,"token_id":5,"text":"a","logprob":-0.500000})");
    CHECK(native_token_event(ev, false) == R"({"index":0,"token_id":5,"text":"a"})");
    ev.index = 1;
    ev.token = -1;
    ev.text = "b";
    CHECK(native_token_event(ev, true) == R"({"index":1,"token_id":null,"text":"b"})");
}

TEST_CASE("usage, timings and Server-Timing print plain decimals") {
    msg::completion c;
    c.prompt_tokens = 3;
    c.completion_tokens = 5;
    c.queue_us = 1500;
    c.decode_us = 2000;
    c.cached_tokens = 2;
    CHECK(usage_json(c) == R"({"prompt_tokens":3,"completion_tokens":5,"total_tokens":8,)"
                           R"("prompt_tokens_details":{"cached_tokens":2}})");
    CHECK(timings_json(c) == R"({"queue_ms":1.500,"prefill_ms":0.000,"ttft_ms":0.000,)"
                             R"("decode_ms":2.000,"total_ms":0.000,"tokens_per_second":2000.00})");
    CHECK(server_timing(c) ==
          "queue;dur=1.500, prefill;dur=0.000, decode;dur=2.000, total;dur=0.000");
    CHECK(openai_finish(msg::finish_reason::deadline) == "length");
    CHECK(openai_finish(msg::finish_reason::eos) == "stop");
    CHECK(openai_finish(msg::finish_reason::stop) == "stop");
    CHECK(openai_finish(msg::finish_reason::length) == "length");
    CHECK(openai_finish(msg::finish_reason::cancelled) == "length"); // a drain cut
}

TEST_CASE("completions logprobs: columns per token, pieces made valid UTF-8") {
    const piece_lookup piece = [](msg::token_id id) {
        return id == 1 ? std::string("a\xC3") : std::string("b");
    };
    msg::token_event ev;
    ev.token = 1;
    ev.text = "a";
    ev.logprob = -1.0f;
    ev.top_tokens = {2};
    ev.top_logprobs = {-2.0f};
    const auto cols = completion_logprob_columns(ev, piece, 4);
    CHECK(cols[0] == "\"a\xEF\xBF\xBD\"");
    CHECK(cols[1] == "-1.000000");
    // The sampled token is listed among the alternatives when it is not a top one (OpenAI).
    CHECK(cols[2] == "{\"b\":-2.000000,\"a\xEF\xBF\xBD\":-1.000000}");
    CHECK(cols[3] == "4");
    std::array<std::vector<std::string>, 4> all;
    for (std::size_t i = 0; i < 4; ++i)
        all[i].push_back(cols[i]);
    CHECK(completion_logprobs_object(all) ==
          "{\"tokens\":[\"a\xEF\xBF\xBD\"],\"token_logprobs\":[-1.000000],"
          "\"top_logprobs\":[{\"b\":-2.000000,\"a\xEF\xBF\xBD\":-1.000000}],\"text_offset\":[4]}");
    // Listed once when it is a top one.
    ev.top_tokens = {1, 2};
    ev.top_logprobs = {-1.0f, -2.0f};
    CHECK(completion_logprob_columns(ev, piece, 4)[2] ==
          "{\"a\xEF\xBF\xBD\":-1.000000,\"b\":-2.000000}");
    ev.top_tokens = {2};
    ev.top_logprobs = {-2.0f};
    CHECK(chat_logprob(ev, piece) ==
          "{\"token\":\"a\xEF\xBF\xBD\",\"logprob\":-1.000000,\"bytes\":[97,195],"
          "\"top_logprobs\":[{\"token\":\"b\",\"logprob\":-2.000000,\"bytes\":[98]}]}");
}
