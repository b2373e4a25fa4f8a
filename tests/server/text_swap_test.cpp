// The text side belongs to the version that runs the request, on the real binary: one alias
// flips back and forth between two versions with different tokenizers (the synthetic tiny model's
// byte-level vocabulary of 512 tokens, and the shipped fortunes model's trained BPE of 4096)
// while many clients send text prompts and chat messages. Every request must be tokenized by the
// version that runs it: a native reply (which names its model_version) has the prompt_tokens of
// that version's tokenization; a chat reply (OpenAI's shape names no version) has the prompt_tokens
// and greedy text of one version's reply to those messages alone. A request tokenized by one
// version and run by the other fails those checks (or is a 400 for ids outside the smaller
// vocabulary). Waits are bounded polls for a state.
#include "server/model_admin.hpp"

#include <atomic>
#include <map>
#include <mutex>

using namespace bitnet;
using test::load_and_wait;
using test::wait_op;

namespace {

constexpr int k_prompts = 48;

std::string prompt_of(int i) {
    static const char* const words[] = {"Never trust a", "The quick brown fox", "A fortune",
                                        "You will meet", "Beware of",           "Hello, world"};
    return std::string(words[i % 6]) + " number " + std::to_string(i) + " of many";
}

/// The BitNet chat form both versions use (neither file has a template of the known
/// forms, docs/GGUF-FORMAT.md §5.3).
std::string chat_text_of(int i) {
    return "User: " + prompt_of(i) + "<|eot_id|>Assistant: ";
}

std::string native_body(int i) {
    return R"({"model":"tiny","prompt":)" +
           boost::json::serialize(boost::json::value(prompt_of(i))) +
           R"(,"max_tokens":1,"temperature":0})";
}

std::string chat_body(int i) {
    return R"({"model":"tiny","messages":[{"role":"user","content":)" +
           boost::json::serialize(boost::json::value(prompt_of(i))) +
           R"(}],"max_tokens":1,"temperature":0})";
}

/// The serving version's token count for `text` (BOS as an inference request adds it, control
/// tokens written in the text parsed as an inference request parses them).
std::size_t count_tokens(const test::server_process& s, const std::string& text) {
    auto r =
        s.post("/v1/tokenize", R"({"model":"tiny","add_bos":true,"parse_special":true,"text":)" +
                                   boost::json::serialize(boost::json::value(text)) + "}");
    REQUIRE_MESSAGE(r.status == 200, r.body);
    return test::parse_object(r.body).at("tokens").as_array().size();
}

/// A chat reply as the checks compare it: prompt tokens and the greedy text.
using chat_answer = std::pair<std::int64_t, std::string>;

chat_answer chat_answer_of(const std::string& body) {
    auto o = test::parse_object(body);
    return {o.at("usage").as_object().at("prompt_tokens").as_int64(),
            std::string(o.at("choices")
                            .as_array()[0]
                            .as_object()
                            .at("message")
                            .as_object()
                            .at("content")
                            .as_string())};
}

/// What the version serving now answers for each prompt, alone: the prompt's token count, and
/// its chat reply.
struct version_answers {
    std::vector<std::size_t> prompt_tokens;
    std::vector<chat_answer> chat;
};

version_answers answers(const test::server_process& s) {
    version_answers out;
    for (int i = 0; i < k_prompts; ++i) {
        out.prompt_tokens.push_back(count_tokens(s, prompt_of(i)));
        auto r = s.post("/v1/chat/completions", chat_body(i));
        REQUIRE_MESSAGE(r.status == 200, r.body);
        out.chat.push_back(chat_answer_of(r.body));
        // The chat reply was tokenized as its rendered template is.
        CHECK(static_cast<std::size_t>(out.chat.back().first) == count_tokens(s, chat_text_of(i)));
    }
    return out;
}

struct record {
    int prompt = 0;
    bool chat = false;
    unsigned status = 0;
    std::string body;
};

} // namespace

TEST_CASE("flips between two tokenizers under load: each request is tokenized by the version "
          "that runs it") {
    test::server_process s({"--max-batch-seqs", "32", "--max-waiting", "1024"});
    const auto bytes_path = s.model_path();
    const auto bpe_path = test::data_path("../../models/bitnet-fortunes-5m-i2_s.gguf");

    auto op = load_and_wait(s, "tiny", bytes_path, R"(,"version":"bytes")");
    REQUIRE_MESSAGE(op.at("state").as_string() == "ready", boost::json::serialize(op));
    const auto bytes = answers(s);
    op = load_and_wait(s, "tiny", bpe_path, R"(,"version":"bpe")");
    REQUIRE_MESSAGE(op.at("state").as_string() == "ready", boost::json::serialize(op));
    const auto bpe = answers(s);
    const std::map<std::string, const version_answers*> by_version{{"bytes", &bytes},
                                                                   {"bpe", &bpe}};
    // The checks below tell the tokenizers apart for every prompt.
    for (int i = 0; i < k_prompts; ++i) {
        REQUIRE(bytes.prompt_tokens[i] != bpe.prompt_tokens[i]);
        REQUIRE(bytes.chat[i].first != bpe.chat[i].first);
    }

    std::atomic<bool> stop{false};
    std::atomic<std::size_t> n_done{0};
    std::mutex mu;
    std::vector<record> records;
    std::vector<std::thread> clients;
    for (int c = 0; c < 24; ++c)
        clients.emplace_back([&, c] {
            for (int i = c; !stop; i += 7) {
                record r;
                r.prompt = i % k_prompts;
                r.chat = c % 3 == 0;
                auto reply = r.chat ? s.post("/v1/chat/completions", chat_body(r.prompt))
                                    : s.post("/v1/inference", native_body(r.prompt));
                r.status = reply.status;
                r.body = std::move(reply.body);
                ++n_done;
                std::lock_guard lock(mu);
                records.push_back(std::move(r));
            }
        });

    // Flip back and forth (each rollback flips to the resident previous version at once), each
    // flip once a few requests ran since the last one, so flips land among requests in flight.
    constexpr int k_flips = 40;
    std::map<std::string, int> flipped_to;
    for (int k = 0; k < k_flips; ++k) {
        const auto before = n_done.load();
        for (int i = 0; i < 2000 && n_done < before + 8; ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        auto r = s.post("/v1/models/tiny/rollback", "{}");
        REQUIRE_MESSAGE(r.status == 202, r.body);
        const auto t = test::parse_object(r.body);
        const auto ended = wait_op(s, "tiny", std::string(t.at("operation_id").as_string()));
        REQUIRE_MESSAGE(ended.at("state").as_string() == "ready", boost::json::serialize(ended));
        ++flipped_to[std::string(ended.at("version").as_string())];
    }
    stop = true;
    for (auto& t : clients)
        t.join();

    CHECK(flipped_to["bytes"] == k_flips / 2);
    CHECK(flipped_to["bpe"] == k_flips / 2);
    std::map<std::string, std::size_t> per_version;
    std::size_t refused = 0, mismatched = 0, chats = 0;
    for (const auto& r : records) {
        INFO("prompt " << r.prompt << std::string(r.chat ? " (chat)" : "") << ": " << r.status
                       << " " << r.body);
        CHECK(r.status == 200);
        if (r.status != 200) {
            ++refused;
            continue;
        }
        bool ok = false;
        const auto i = static_cast<std::size_t>(r.prompt);
        if (r.chat) {
            // One version's answer, whole: its token count and its text.
            ++chats;
            const auto got = chat_answer_of(r.body);
            ok = got == bytes.chat[i] || got == bpe.chat[i];
        } else {
            const auto o = test::parse_object(r.body);
            const std::string version(o.at("model_version").as_string());
            REQUIRE(by_version.count(version) == 1);
            ++per_version[version];
            ok = o.at("usage").as_object().at("prompt_tokens").as_int64() ==
                 static_cast<std::int64_t>(by_version.at(version)->prompt_tokens[i]);
        }
        CHECK(ok);
        if (!ok)
            ++mismatched;
    }
    MESSAGE(records.size() << " requests over " << k_flips << " flips: " << refused << " refused, "
                           << mismatched << " tokenized by the other version");
    CHECK(refused == 0);
    CHECK(mismatched == 0);
    CHECK(records.size() >= static_cast<std::size_t>(8 * k_flips));
    CHECK(chats > 0);
    CHECK(per_version["bytes"] > 0);
    CHECK(per_version["bpe"] > 0);
}
