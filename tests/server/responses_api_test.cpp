// OpenAI's Responses API on the real binary and the shipped default model: a plain response and
// a stream with the Responses event sequence give the chat route's greedy text; a forced function
// call is a function_call item (streamed as argument deltas) and its output goes back as a
// function_call_output item; text.format constrains the text; max_output_tokens makes the
// response incomplete.
#include "server/model_admin.hpp"
#include "server/server_process.hpp"

using namespace bitnet;
namespace json = boost::json;

namespace {

const std::string tool = R"("tools":[{"type":"function","name":"get_weather","parameters":{
    "type":"object","properties":{"city":{"type":"string","maxLength":12}},"required":["city"],
    "additionalProperties":false}}])";

} // namespace

TEST_CASE("responses: a plain response and a stream, the chat route's greedy text") {
    test::default_model m;
    const auto chat = m.s.post("/v1/chat/completions",
                               R"({"model":"fortunes","max_tokens":12,"temperature":0,
                                   "messages":[{"role":"system","content":"You tell fortunes."},
                                               {"role":"user","content":"Tell me one."}]})");
    REQUIRE_MESSAGE(chat.status == 200, chat.body);
    const auto chat_o = test::parse_object(chat.body);
    const std::string want(chat_o.at("choices").at(0).at("message").at("content").as_string());
    const std::string ask = R"({"model":"fortunes","max_output_tokens":12,"temperature":0,
        "instructions":"You tell fortunes.","input":"Tell me one.")";

    const auto plain = m.s.post("/v1/responses", ask + "}");
    REQUIRE_MESSAGE(plain.status == 200, plain.body);
    const auto o = test::parse_object(plain.body);
    CHECK(std::string(o.at("id").as_string()).rfind("resp_", 0) == 0);
    CHECK(o.at("object") == "response");
    const std::string status(o.at("status").as_string());
    CHECK((status == "completed" || status == "incomplete"));
    const auto& item = o.at("output").at(0).as_object();
    CHECK(item.at("type") == "message");
    CHECK(item.at("content").at(0).at("type") == "output_text");
    CHECK(item.at("content").at(0).at("text").as_string() == want);
    CHECK(o.at("usage").at("output_tokens") == chat_o.at("usage").at("completion_tokens"));
    CHECK(o.at("usage").at("input_tokens") == chat_o.at("usage").at("prompt_tokens"));

    const auto streamed = m.s.post("/v1/responses", ask + R"(,"stream":true})");
    REQUIRE(streamed.status == 200);
    CHECK(streamed.complete);
    std::vector<std::string> kinds;
    std::string text;
    std::int64_t seq = 0;
    for (const auto& [ev, data] : test::sse_events(streamed.body)) {
        const auto d = test::parse_object(data);
        CHECK(d.at("type").as_string() == ev);
        CHECK(d.at("sequence_number").as_int64() == seq++);
        if (kinds.empty() || kinds.back() != ev)
            kinds.push_back(ev);
        if (ev == "response.output_text.delta")
            text += d.at("delta").as_string();
        if (ev == "response.completed" || ev == "response.incomplete")
            CHECK(d.at("response").at("output").at(0).at("content").at(0).at("text").as_string() ==
                  want);
    }
    CHECK(text == want);
    CHECK(kinds == std::vector<std::string>{
                       "response.created", "response.in_progress", "response.output_item.added",
                       "response.content_part.added", "response.output_text.delta",
                       "response.output_text.done", "response.content_part.done",
                       "response.output_item.done",
                       status == "completed" ? "response.completed" : "response.incomplete"});
}

TEST_CASE("responses: a forced function call, streamed as argument deltas, and its output "
          "answered, text.format and max_output_tokens") {
    test::default_model m;
    const std::string ask = R"({"model":"fortunes","max_output_tokens":64,"temperature":0,)" +
                            tool + R"(,"tool_choice":"required","input":"Weather in Oslo?")";
    const auto plain = m.s.post("/v1/responses", ask + "}");
    REQUIRE_MESSAGE(plain.status == 200, plain.body);
    const auto o = test::parse_object(plain.body);
    CHECK(o.at("status") == "completed");
    const auto& call = o.at("output").at(0).as_object();
    CHECK(call.at("type") == "function_call");
    CHECK(call.at("name") == "get_weather");
    const auto args = json::parse(call.at("arguments").as_string());
    REQUIRE(args.at("city").is_string());

    const auto streamed = m.s.post("/v1/responses", ask + R"(,"stream":true})");
    REQUIRE(streamed.status == 200);
    std::string deltas;
    bool added = false, done = false;
    for (const auto& [ev, data] : test::sse_events(streamed.body)) {
        const auto d = test::parse_object(data);
        if (ev == "response.output_item.added") {
            CHECK(d.at("item").at("type") == "function_call");
            added = true;
        }
        if (ev == "response.function_call_arguments.delta")
            deltas += d.at("delta").as_string();
        if (ev == "response.function_call_arguments.done") {
            CHECK(d.at("arguments").as_string() == deltas);
            done = true;
        }
    }
    CHECK(added);
    CHECK(done);
    CHECK(json::parse(deltas) == args); // greedy: the same call

    // The second turn: the call and its output go back as items.
    const auto second = m.s.post(
        "/v1/responses", R"({"model":"fortunes","max_output_tokens":8,"temperature":0,"input":[)"
                         R"({"role":"user","content":"Weather in Oslo?"},)" +
                             json::serialize(json::object{{"type", "function_call"},
                                                          {"call_id", call.at("call_id")},
                                                          {"name", call.at("name")},
                                                          {"arguments", call.at("arguments")}}) +
                             R"(,{"type":"function_call_output","call_id":)" +
                             json::serialize(call.at("call_id")) + R"(,"output":"sunny"}]})");
    REQUIRE_MESSAGE(second.status == 200, second.body);
    CHECK(test::parse_object(second.body).at("output").at(0).at("type") == "message");

    // text.format: a JSON object with the schema's one property.
    const auto formatted =
        m.s.post("/v1/responses",
                 R"({"model":"fortunes","max_output_tokens":64,"temperature":0,"input":"A name?",
            "text":{"format":{"type":"json_schema","name":"n","strict":true,"schema":{
            "type":"object","properties":{"name":{"type":"string","maxLength":8}},
            "required":["name"],"additionalProperties":false}}}})");
    REQUIRE_MESSAGE(formatted.status == 200, formatted.body);
    const auto fo = test::parse_object(formatted.body);
    REQUIRE(fo.at("status") == "completed");
    const auto value =
        json::parse(fo.at("output").at(0).at("content").at(0).at("text").as_string());
    CHECK(value.at("name").is_string());

    // Cut by max_output_tokens: incomplete, with the reason.
    const auto cut = m.s.post("/v1/responses",
                              R"({"model":"fortunes","max_output_tokens":1,"input":"Tell me"})");
    REQUIRE(cut.status == 200);
    const auto co = test::parse_object(cut.body);
    if (co.at("usage").at("output_tokens") == 1) {
        CHECK(co.at("status") == "incomplete");
        CHECK(co.at("incomplete_details").at("reason") == "max_output_tokens");
    }
    // previous_response_id that names nothing stored: a 400 in OpenAI's shape naming it.
    const auto prev = m.s.post("/v1/responses", R"({"input":"x","previous_response_id":"resp_1"})");
    CHECK(prev.status == 400);
    CHECK(test::parse_object(prev.body).at("error").at("param") == "previous_response_id");
}

TEST_CASE("responses: stored replies continue by previous_response_id and item_reference, per "
          "API key, and store false keeps nothing") {
    test::server_process s({"--api-keys", "store-key-a1,store-key-b2"});
    const std::string a = "store-key-a1", b = "store-key-b2";
    const auto first =
        s.post("/v1/responses",
               R"({"input":"Weather in Oslo?","max_output_tokens":64,"temperature":0,)"
               R"("tool_choice":{"type":"function","name":"get_weather"},)" +
                   tool + "}",
               a);
    REQUIRE_MESSAGE(first.status == 200, first.body);
    const auto fo = test::parse_object(first.body);
    CHECK(fo.at("store") == true);
    const std::string resp_id(fo.at("id").as_string());
    const auto& call = fo.at("output").at(0);
    REQUIRE(call.at("type") == "function_call");
    const std::string fc_id(call.at("id").as_string());
    const std::string call_id(call.at("call_id").as_string());
    const auto first_input = fo.at("usage").at("input_tokens").as_int64();

    // The tool's output after the stored call: the conversation is the stored one plus this.
    const std::string result =
        R"({"type":"function_call_output","call_id":")" + call_id + R"(","output":"sunny"})";
    const auto chained = s.post("/v1/responses",
                                R"({"previous_response_id":")" + resp_id + R"(","input":[)" +
                                    result + R"(],"max_output_tokens":4,"temperature":0})",
                                a);
    REQUIRE_MESSAGE(chained.status == 200, chained.body);
    const auto co = test::parse_object(chained.body);
    CHECK(co.at("output").at(0).at("type") == "message");
    CHECK(co.at("usage").at("input_tokens").as_int64() > first_input);
    // The same turn by reference (what the AI SDK sends with store on): the same prompt.
    const auto by_ref =
        s.post("/v1/responses",
               R"({"input":[{"role":"user","content":"Weather in Oslo?"},)"
               R"({"type":"item_reference","id":")" +
                   fc_id + R"("},)" + result + R"(],"max_output_tokens":4,"temperature":0})",
               a);
    REQUIRE_MESSAGE(by_ref.status == 200, by_ref.body);
    CHECK(test::parse_object(by_ref.body).at("usage").at("input_tokens") ==
          co.at("usage").at("input_tokens"));
    CHECK(test::parse_object(by_ref.body).at("output").at(0).at("content").at(0).at("text") ==
          co.at("output").at(0).at("content").at(0).at("text"));

    // Another key cannot name them.
    const auto other =
        s.post("/v1/responses", R"({"previous_response_id":")" + resp_id + R"(","input":"x"})", b);
    CHECK(other.status == 400);
    CHECK(test::parse_object(other.body).at("error").at("param") == "previous_response_id");
    const auto other_item = s.post(
        "/v1/responses", R"({"input":[{"type":"item_reference","id":")" + fc_id + R"("}]})", b);
    CHECK(other_item.status == 400);
    CHECK(test::parse_object(other_item.body).at("error").at("param") == "input");

    // store false: answered, not kept.
    const auto unstored =
        s.post("/v1/responses", R"({"input":"Hi","max_output_tokens":2,"store":false})", a);
    REQUIRE(unstored.status == 200);
    const auto uo = test::parse_object(unstored.body);
    CHECK(uo.at("store") == false);
    const auto after = s.post("/v1/responses",
                              R"({"previous_response_id":")" +
                                  std::string(uo.at("id").as_string()) + R"(","input":"x"})",
                              a);
    CHECK(after.status == 400);
}
