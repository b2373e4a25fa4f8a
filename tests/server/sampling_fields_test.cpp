// The sampling fields on the real binary and the shipped default model, each in the native shape
// and an OpenAI one, with its effect shown exactly: greedy with logit_bias +100 on one id gives
// only that id, -100 on the greedy token removes it, a frequency or presence penalty lowers the
// repeats of a fixed greedy generation, ignore_eos gives exactly max_tokens, min_tokens holds the
// end of generation back (the tokens before it unchanged), and seeded draws with them repeat.
#include "server/model_admin.hpp"
#include "server/server_process.hpp"

#include <set>
#include <string>
#include <vector>

using namespace bitnet;
namespace json = boost::json;

namespace {

const std::string prompt = "Never trust a";

/// A greedy native request with `extra` members.
std::string native(int max_tokens, const std::string& extra = {}) {
    return R"({"model":"fortunes","prompt":")" + prompt + R"(","temperature":0,"max_tokens":)" +
           std::to_string(max_tokens) + (extra.empty() ? "" : "," + extra) + "}";
}

/// The same as an OpenAI completions request, with the chosen tokens' text reported.
std::string completions(int max_tokens, const std::string& extra = {}) {
    return R"({"model":"fortunes","prompt":")" + prompt + R"(","temperature":0,"logprobs":0,)" +
           R"("max_tokens":)" + std::to_string(max_tokens) + (extra.empty() ? "" : "," + extra) +
           "}";
}

struct generation {
    std::vector<std::int64_t> tokens;
    std::string text;
    std::string finish;
};

generation run_native(test::server_process& s, const std::string& body) {
    const auto r = s.post("/v1/inference", body);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    const auto o = test::parse_object(r.body);
    generation g;
    for (const auto& t : o.at("tokens").as_array())
        g.tokens.push_back(t.as_int64());
    g.text = std::string(o.at("text").as_string());
    g.finish = std::string(o.at("finish_reason").as_string());
    return g;
}

/// A completions reply: its text, finish reason, and completion_tokens (as `tokens`' size).
generation run_completions(test::server_process& s, const std::string& body) {
    const auto r = s.post("/v1/completions", body);
    REQUIRE_MESSAGE(r.status == 200, r.body);
    const auto o = test::parse_object(r.body);
    const auto& c = o.at("choices").at(0).as_object();
    generation g;
    g.text = std::string(c.at("text").as_string());
    g.finish = std::string(c.at("finish_reason").as_string());
    g.tokens.resize(static_cast<std::size_t>(o.at("usage").at("completion_tokens").as_int64()));
    return g;
}

std::size_t repeats(const std::vector<std::int64_t>& tokens) {
    return tokens.size() - std::set<std::int64_t>(tokens.begin(), tokens.end()).size();
}

std::string bias(std::int64_t id, int value) {
    return R"("logit_bias":{")" + std::to_string(id) + R"(":)" + std::to_string(value) + "}";
}

} // namespace

TEST_CASE("sampling fields on the default model, native and OpenAI shapes: logit_bias and "
          "penalties") {
    test::default_model m;
    auto& s = m.s;
    const auto plain = run_native(s, native(48, R"("ignore_eos":true)"));
    REQUIRE(plain.tokens.size() == 48);

    SUBCASE("logit_bias +100 on one id under greedy gives only that id") {
        const auto forced_id = plain.tokens[3]; // a token of the model's own choosing
        const auto g = run_native(s, native(8, bias(forced_id, 100)));
        CHECK(g.tokens == std::vector<std::int64_t>(8, forced_id));
        CHECK(g.finish == "length");
        // The completions shape: the text is that token's, eight times.
        const auto piece =
            test::parse_object(s.post("/v1/detokenize", R"({"model":"fortunes","tokens":[)" +
                                                            std::to_string(forced_id) + "]}")
                                   .body);
        std::string eight;
        for (int i = 0; i < 8; ++i)
            eight += piece.at("text").as_string();
        CHECK(run_completions(s, completions(8, bias(forced_id, 100))).text == eight);
    }

    SUBCASE("logit_bias -100 on the greedy token removes it") {
        const auto first = plain.tokens[0];
        const auto g = run_native(s, native(48, R"("ignore_eos":true,)" + bias(first, -100)));
        CHECK(g.tokens[0] != first);
        CHECK(std::find(g.tokens.begin(), g.tokens.end(), first) == g.tokens.end());
        // The completions shape gives the same text as the native one.
        CHECK(
            run_completions(s, completions(48, R"("ignore_eos":true,)" + bias(first, -100))).text ==
            g.text);
    }

    SUBCASE("a frequency or presence penalty lowers the repeats of a fixed greedy generation") {
        REQUIRE_MESSAGE(repeats(plain.tokens) > 4, "the greedy text repeats: " << plain.text);
        for (const char* field : {"frequency_penalty", "presence_penalty"}) {
            CAPTURE(field);
            const auto extra = std::string(R"("ignore_eos":true,")") + field + R"(":2)";
            const auto g = run_native(s, native(48, extra));
            CHECK(g.tokens.size() == 48);
            CHECK(repeats(g.tokens) < repeats(plain.tokens));
            // Exact: the same request gives the same tokens; the OpenAI shape the same text.
            CHECK(run_native(s, native(48, extra)).tokens == g.tokens);
            CHECK(run_completions(s, completions(48, extra)).text == g.text);
        }
        // A negative penalty favours repeats.
        const auto more = run_native(s, native(48, R"("ignore_eos":true,"frequency_penalty":-2)"));
        CHECK(repeats(more.tokens) >= repeats(plain.tokens));
    }
}

TEST_CASE("sampling fields on the default model, native and OpenAI shapes: ignore_eos, "
          "min_tokens, seeds and bad ids") {
    test::default_model m;
    auto& s = m.s;

    SUBCASE("ignore_eos gives exactly max_tokens where the model would end early") {
        const auto natural = run_native(s, native(100));
        REQUIRE_MESSAGE(natural.tokens.size() < 100, "the model ends early: " << natural.text);
        CHECK(natural.finish == "eos");
        const auto fixed = run_native(s, native(100, R"("ignore_eos":true)"));
        CHECK(fixed.tokens.size() == 100);
        CHECK(fixed.finish == "length");
        // The tokens before the end the model chose are the same.
        CHECK(std::equal(natural.tokens.begin(), natural.tokens.end(), fixed.tokens.begin()));
        const auto openai = run_completions(s, completions(100, R"("ignore_eos":true)"));
        CHECK(openai.tokens.size() == 100);
        CHECK(openai.finish == "length");
        CHECK(openai.text == fixed.text);
        // A stop id still ends it: it is the client's own.
        const auto stopped = run_native(
            s, native(100, R"("ignore_eos":true,"stop_token_ids":[)" +
                               std::to_string(fixed.tokens[natural.tokens.size() + 1]) + "]"));
        CHECK(stopped.tokens.size() <= natural.tokens.size() + 1);
        CHECK(stopped.finish == "stop");
    }

    SUBCASE("min_tokens holds the end of generation back, the tokens before it unchanged") {
        const auto natural = run_native(s, native(100));
        REQUIRE(natural.tokens.size() < 90);
        const auto n = natural.tokens.size();
        const auto g = run_native(s, native(100, R"("min_tokens":)" + std::to_string(n + 5)));
        CHECK(g.tokens.size() >= n + 5);
        CHECK(std::equal(natural.tokens.begin(), natural.tokens.end(), g.tokens.begin()));
        // Chat shape, same field: at least that many completion tokens.
        const auto chat = s.post("/v1/chat/completions",
                                 R"({"model":"fortunes","max_tokens":60,"temperature":0,)"
                                 R"("min_tokens":50,"messages":[{"role":"user","content":"Hi"}]})");
        REQUIRE_MESSAGE(chat.status == 200, chat.body);
        CHECK(test::parse_object(chat.body).at("usage").at("completion_tokens").as_int64() >= 50);
    }

    SUBCASE("seeded draws with penalties and a bias repeat, in both shapes") {
        const std::string extra =
            R"("temperature":0.9,"seed":7,"presence_penalty":0.5,)"
            R"("frequency_penalty":0.5,"logit_bias":{"13":5},"ignore_eos":true)";
        auto seeded = [&](const std::string& head) {
            return head + R"("model":"fortunes","prompt":")" + prompt + R"(","max_tokens":24,)" +
                   extra + "}";
        };
        const auto a = run_native(s, seeded("{"));
        CHECK(run_native(s, seeded("{")).tokens == a.tokens);
        CHECK(run_completions(s, seeded("{")).text == a.text);
    }

    SUBCASE("an id outside the vocabulary is a 400 naming logit_bias, in every shape") {
        for (const auto& [path, body] :
             {std::pair{"/v1/inference", native(4, bias(99999, 1))},
              std::pair{"/v1/completions", completions(4, bias(99999, 1))},
              std::pair{"/v1/chat/completions",
                        std::string(R"({"model":"fortunes","max_tokens":4,)") + bias(99999, 1) +
                            R"(,"messages":[{"role":"user","content":"Hi"}]})"}}) {
            CAPTURE(path);
            const auto r = s.post(path, body);
            CHECK(r.status == 400);
            CHECK(test::parse_object(r.body).at("error").at("param") == "logit_bias");
        }
    }
}
