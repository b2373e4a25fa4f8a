// Tool calls the model chooses itself (tool_choice "auto", or none given) on the real binary: a
// test model whose template is Qwen2.5's (Hermes <tool_call> calls) and whose vocabulary has
// <tool_call> as one user-defined token. The server's test hook (test_tool_call_opener_bias)
// raises that token's logit, so the random-weight model opens a call; from there the call grammar
// holds it to a listed function and its parameters, and the call comes back parsed in each API
// family, plain and streamed. A turn whose model does not open a call answers text.
#include "server/model_admin.hpp"
#include "server/server_process.hpp"
#include "support/test_data.hpp"

#include <set>
#include <vector>

using namespace bitnet;
namespace json = boost::json;

namespace {

const std::string k_params = R"({"type":"object","properties":{"city":{"enum":["Paris","Oslo"]}},)"
                             R"("required":["city"],"additionalProperties":false})";

const std::string k_chat_tools =
    R"("tools":[{"type":"function","function":{"name":"get_weather","description":"The weather",)"
    R"("parameters":)" +
    k_params + "}}]";

/// The Hermes-template test model, loaded as "tools" on `s`.
void load_tool_model(const test::scratch_dir& dir, const test::server_process& s) {
    const auto path = test::make_model(
        dir, "hermes.gguf",
        "--seed 3 --user-token '<tool_call>' --user-token '</tool_call>' --chat-template " +
            test::data_path("chat_templates/qwen2.5-instruct.jinja"));
    const auto op = test::load_and_wait(s, "tools", path);
    REQUIRE_MESSAGE(op.at("state").as_string() == "ready", json::serialize(op));
}

/// The opener's token id in the test model (one user-defined token).
std::string opener_id(const test::server_process& s) {
    auto r =
        s.post("/v1/tokenize",
               R"({"model":"tools","add_bos":false,"parse_special":true,"text":"<tool_call>"})");
    REQUIRE_MESSAGE(r.status == 200, r.body);
    const auto ids = test::parse_object(r.body).at("tokens").as_array();
    REQUIRE(ids.size() == 1);
    return std::to_string(ids.at(0).as_int64());
}

/// A whole call: get_weather with a city the enum allows.
void check_arguments(const json::value& args) {
    const auto& o = args.as_object();
    REQUIRE(o.size() == 1);
    const auto city = std::string(o.at("city").as_string());
    CHECK((city == "Paris" || city == "Oslo"));
}

std::string chat(const std::string& extra) {
    return R"({"model":"tools","max_tokens":120,"temperature":0,)"
           R"("messages":[{"role":"user","content":"Weather in Oslo?"}],)" +
           k_chat_tools + extra + "}";
}

} // namespace

TEST_CASE("auto tool calls: chat returns the call the model opened, plain and streamed, and text "
          "when it opens none") {
    test::scratch_dir dir;
    test::server_process s({"--test-tool-call-opener-bias", "100"});
    load_tool_model(dir, s);

    // No tool_choice: "auto". The model opens a call; the grammar writes a listed one.
    auto r = s.post("/v1/chat/completions", chat(""));
    REQUIRE_MESSAGE(r.status == 200, r.body);
    auto body = json::parse(r.body);
    const auto& choice = body.at("choices").at(0);
    CHECK(choice.at("finish_reason").as_string() == "tool_calls");
    const auto& msg = choice.at("message");
    CHECK(msg.at("content").is_null()); // the opener was its first token: no text before it
    const auto& calls = msg.at("tool_calls").as_array();
    REQUIRE(calls.size() == 1);
    CHECK(calls.at(0).at("function").at("name").as_string() == "get_weather");
    CHECK(calls.at(0).at("id").as_string().starts_with("call_"));
    check_arguments(json::parse(calls.at(0).at("function").at("arguments").as_string()));

    // "auto" said, streamed: the call as one tool_calls delta, no opener in any content delta.
    r = s.post("/v1/chat/completions", chat(R"(,"tool_choice":"auto","stream":true)"));
    REQUIRE_MESSAGE(r.status == 200, r.body);
    bool saw_call = false;
    std::string finish, content;
    for (const auto& d : test::sse_data(r.body)) {
        if (d == "[DONE]")
            continue;
        const auto chunk = json::parse(d);
        const auto& c = chunk.at("choices").at(0);
        const auto& delta = c.at("delta").as_object();
        if (const auto* tc = delta.if_contains("tool_calls")) {
            const auto& call = tc->as_array().at(0);
            CHECK(call.at("index").as_int64() == 0);
            CHECK(call.at("function").at("name").as_string() == "get_weather");
            check_arguments(json::parse(call.at("function").at("arguments").as_string()));
            saw_call = true;
        }
        if (const auto* t = delta.if_contains("content"); t && t->is_string())
            content += t->as_string();
        if (c.at("finish_reason").is_string())
            finish = c.at("finish_reason").as_string();
    }
    CHECK(saw_call);
    CHECK(finish == "tool_calls");
    CHECK(content.find("<tool_call>") == std::string::npos);

    // The client's own bias on the opener wins over the hook: the model opens no call, and
    // the turn is text.
    r = s.post("/v1/chat/completions",
               chat(R"(,"max_tokens":16,"logit_bias":{")" + opener_id(s) + R"(":-100})"));
    REQUIRE_MESSAGE(r.status == 200, r.body);
    body = json::parse(r.body);
    const auto& plain = body.at("choices").at(0);
    CHECK(plain.at("finish_reason").as_string() != "tool_calls");
    CHECK_FALSE(plain.at("message").as_object().contains("tool_calls"));
    REQUIRE(plain.at("message").at("content").is_string());
    CHECK_FALSE(plain.at("message").at("content").as_string().empty());
}

TEST_CASE("auto tool calls: Messages answers a tool_use block and Responses a function_call "
          "item, plain and streamed") {
    test::scratch_dir dir;
    test::server_process s({"--test-tool-call-opener-bias", "100"});
    load_tool_model(dir, s);

    const std::string messages =
        R"({"model":"tools","max_tokens":120,"temperature":0,)"
        R"("messages":[{"role":"user","content":"Weather in Oslo?"}],)"
        R"("tools":[{"name":"get_weather","description":"The weather","input_schema":)" +
        k_params + "}]";
    auto r = s.post("/v1/messages", messages + "}");
    REQUIRE_MESSAGE(r.status == 200, r.body);
    auto body = json::parse(r.body);
    CHECK(body.at("stop_reason").as_string() == "tool_use");
    const json::object* use = nullptr;
    for (const auto& b : body.at("content").as_array())
        if (b.at("type").as_string() == "tool_use")
            use = &b.as_object();
    REQUIRE(use);
    CHECK(use->at("name").as_string() == "get_weather");
    check_arguments(use->at("input"));

    // Streamed: the text block the turn began with closes, then the call's tool_use block.
    r = s.post("/v1/messages", messages + R"(,"stream":true})");
    REQUIRE_MESSAGE(r.status == 200, r.body);
    std::string stop_reason, partial;
    std::int64_t use_index = -1;
    for (const auto& [event, data] : test::sse_events(r.body)) {
        const auto o = json::parse(data).as_object();
        if (event == "content_block_start" &&
            o.at("content_block").at("type").as_string() == "tool_use") {
            use_index = o.at("index").as_int64();
            CHECK(o.at("content_block").at("name").as_string() == "get_weather");
        }
        if (event == "content_block_delta" &&
            o.at("delta").at("type").as_string() == "input_json_delta")
            partial += o.at("delta").at("partial_json").as_string();
        if (event == "message_delta")
            stop_reason = o.at("delta").at("stop_reason").as_string();
    }
    CHECK(use_index == 1);
    CHECK(stop_reason == "tool_use");
    check_arguments(json::parse(partial));

    const std::string responses =
        R"({"model":"tools","max_output_tokens":120,"temperature":0,"input":"Weather in Oslo?",)"
        R"("tools":[{"type":"function","name":"get_weather","description":"The weather",)"
        R"("parameters":)" +
        k_params + "}]";
    r = s.post("/v1/responses", responses + "}");
    REQUIRE_MESSAGE(r.status == 200, r.body);
    body = json::parse(r.body);
    CHECK(body.at("status").as_string() == "completed");
    const json::object* fc = nullptr;
    for (const auto& item : body.at("output").as_array())
        if (item.at("type").as_string() == "function_call")
            fc = &item.as_object();
    REQUIRE(fc);
    CHECK(fc->at("name").as_string() == "get_weather");
    check_arguments(json::parse(fc->at("arguments").as_string()));

    std::vector<std::string> plain_types;
    for (const auto& item : body.at("output").as_array())
        plain_types.emplace_back(item.at("type").as_string());
    // The opener comes first (the hook's bias): no text, so no message item, as the plain reply.
    CHECK(plain_types == std::vector<std::string>{"function_call"});

    r = s.post("/v1/responses", responses + R"(,"stream":true})");
    REQUIRE_MESSAGE(r.status == 200, r.body);
    // The stream's items are the plain reply's: no empty message item opened before the call
    // (and stored with the reply), which the stream used to add.
    std::vector<std::string> added, completed;
    std::string args;
    for (const auto& [event, data] : test::sse_events(r.body)) {
        const auto o = json::parse(data).as_object();
        if (event == "response.output_item.added")
            added.emplace_back(o.at("item").at("type").as_string());
        if (event == "response.function_call_arguments.done") {
            CHECK(o.at("output_index").as_int64() == 0);
            args = o.at("arguments").as_string();
        }
        if (event == "response.completed")
            for (const auto& item : o.at("response").at("output").as_array())
                completed.emplace_back(item.at("type").as_string());
    }
    CHECK(added == plain_types);
    CHECK(completed == plain_types);
    check_arguments(json::parse(args));
}

TEST_CASE("auto tool calls: without the hook the test model opens no call and answers text in "
          "each family") {
    test::scratch_dir dir;
    test::server_process s;
    load_tool_model(dir, s);
    auto r = s.post("/v1/chat/completions", chat(R"(,"max_tokens":16)"));
    REQUIRE_MESSAGE(r.status == 200, r.body);
    auto body = json::parse(r.body);
    CHECK_FALSE(body.at("choices").at(0).at("message").as_object().contains("tool_calls"));
    CHECK(body.at("choices").at(0).at("message").at("content").is_string());

    r = s.post("/v1/messages", R"({"model":"tools","max_tokens":16,"temperature":0,)"
                               R"("messages":[{"role":"user","content":"Weather in Oslo?"}],)"
                               R"("tools":[{"name":"get_weather","input_schema":)" +
                                   k_params + "}]}");
    REQUIRE_MESSAGE(r.status == 200, r.body);
    body = json::parse(r.body);
    CHECK(body.at("stop_reason").as_string() != "tool_use");
    for (const auto& b : body.at("content").as_array())
        CHECK(b.at("type").as_string() == "text");

    // A function whose parameters use a keyword the compiler refuses: forcing a call to it is a
    // 400 naming tools, but an auto turn, which asked for no call, runs as plain generation.
    const std::string refused =
        R"("tools":[{"type":"function","function":{"name":"f","parameters":)"
        R"({"type":"object","allOf":[{"required":["a"]}]}}}])";
    const std::string head = R"({"model":"tools","max_tokens":8,"temperature":0,)"
                             R"("messages":[{"role":"user","content":"Hi"}],)" +
                             refused;
    r = s.post("/v1/chat/completions", head + R"(,"tool_choice":"required"})");
    CHECK(r.status == 400);
    CHECK(r.body.find("tools") != std::string::npos);
    r = s.post("/v1/chat/completions", head + "}");
    REQUIRE_MESSAGE(r.status == 200, r.body);
    CHECK(json::parse(r.body).at("choices").at(0).at("message").at("content").is_string());
}

TEST_CASE("auto tool calls: a Llama 3.1 template's call is the reply's own JSON object, with "
          "\"parameters\"") {
    test::scratch_dir dir;
    test::server_process s({"--test-tool-call-opener-bias", "100"});
    // Llama 3.1 writes a call as the reply itself: {"name": ..., "parameters": {...}}, so its
    // opener is the reply's first `{` (one byte token in the test model's vocabulary).
    const auto path = test::make_model(
        dir, "llama31.gguf",
        "--seed 3 --chat-template " + test::data_path("chat_templates/llama-3.1-instruct.jinja"));
    const auto op = test::load_and_wait(s, "tools", path);
    REQUIRE_MESSAGE(op.at("state").as_string() == "ready", json::serialize(op));
    auto r = s.post("/v1/chat/completions", chat(""));
    REQUIRE_MESSAGE(r.status == 200, r.body);
    const auto body = json::parse(r.body);
    const auto& choice = body.at("choices").at(0);
    CHECK(choice.at("finish_reason").as_string() == "tool_calls");
    const auto& calls = choice.at("message").at("tool_calls").as_array();
    REQUIRE(calls.size() == 1);
    CHECK(calls.at(0).at("function").at("name").as_string() == "get_weather");
    check_arguments(json::parse(calls.at(0).at("function").at("arguments").as_string()));
}
