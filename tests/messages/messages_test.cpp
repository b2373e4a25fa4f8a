// Message types survive CAF serialisation field by field, and errors keep their errc and text
// across the caf::error boundary.
#include "messages/errors.hpp"
#include "messages/interfaces.hpp"

#include <caf/actor_system.hpp>
#include <caf/actor_system_config.hpp>
#include <caf/binary_deserializer.hpp>
#include <caf/binary_serializer.hpp>
#include <caf/scoped_actor.hpp>
#include <caf/sec.hpp>
#include <caf/typed_event_based_actor.hpp>
#include <doctest/doctest.h>

namespace {

using namespace bitnet;

struct test_config : caf::actor_system_config {
    test_config() {
        msg::register_messages(*this);
        set("scheduler.max-threads", 1);
    }
};

template <class T>
T round_trip(caf::actor_system& sys, T x) {
    std::vector<char> buf;
    caf::binary_serializer sink{sys, buf};
    REQUIRE_FALSE(sink(x));
    T y;
    caf::binary_deserializer source{sys, buf};
    REQUIRE_FALSE(source(y));
    return y;
}

} // namespace

TEST_CASE("generate_request and step messages round-trip through the binary serializer") {
    test_config cfg;
    caf::actor_system sys{cfg};

    msg::generate_request r;
    r.id = 42;
    r.model = "tiny";
    r.prompt = {1, 2, 3};
    r.max_tokens = 7;
    r.params.temperature = 0.0f;
    r.params.seed = 99;
    r.params.n_logprobs = 3;
    r.params.report_logprob = false;
    r.stop = {"\n\n", "END"};
    r.stop_token_ids = {5};
    r.prio = msg::priority::high;
    r.timeout_ms = 1500;
    r.t_received_us = 123456789;
    r.n_resumed = 2;
    auto r2 = round_trip(sys, r);
    CHECK(r2.id == 42);
    CHECK(r2.model == "tiny");
    CHECK(r2.prompt == r.prompt);
    CHECK(r2.max_tokens == 7);
    CHECK(r2.params.temperature == 0.0f);
    CHECK(r2.params.seed == 99);
    CHECK(r2.params.n_logprobs == 3);
    CHECK_FALSE(r2.params.report_logprob);
    CHECK(r2.stop == r.stop);
    CHECK(r2.stop_token_ids == r.stop_token_ids);
    CHECK(r2.prio == msg::priority::high);
    CHECK(r2.timeout_ms == 1500);
    CHECK(r2.t_received_us == 123456789);
    CHECK(r2.n_resumed == 2);

    msg::step_batch b;
    b.step = 3;
    b.release = {8};
    b.chunks.push_back({{9, {4, 5}, 2, true, 3}, {}});
    b.chunks.back().draft_next = 4;
    auto b2 = round_trip(sys, b);
    REQUIRE(b2.chunks.size() == 1);
    CHECK(b2.chunks[0].draft_next == 4);
    CHECK(b2.chunks[0].part.seq == 9);
    CHECK(b2.chunks[0].part.tokens == std::vector<msg::token_id>{4, 5});
    CHECK(b2.chunks[0].part.pos0 == 2);
    CHECK(b2.chunks[0].part.want_logits);
    CHECK(b2.chunks[0].part.decoded_from == 3);
    CHECK(b2.release == std::vector<std::uint64_t>{8});

    msg::step_result s;
    s.step = 3;
    s.samples.push_back({9, 11, -0.25f, {11, 12}, {-0.25f, -2.0f}});
    auto s2 = round_trip(sys, s);
    REQUIRE(s2.samples.size() == 1);
    CHECK(s2.samples[0].top_tokens == std::vector<msg::token_id>{11, 12});
    CHECK(s2.samples[0].logprob == -0.25f);
    s.failed.push_back({10, static_cast<std::int32_t>(errc::invalid_argument), "id 99", "prompt"});
    s2 = round_trip(sys, s);
    REQUIRE(s2.failed.size() == 1);
    CHECK(s2.failed[0].seq == 10);
    CHECK(s2.failed[0].code == static_cast<std::int32_t>(errc::invalid_argument));
    CHECK(s2.failed[0].message == "id 99");
    CHECK(s2.failed[0].param == "prompt");
    // A draft model's proposals travel with the result.
    s.drafts.push_back({9, {12, 13, 14}});
    s2 = round_trip(sys, s);
    REQUIRE(s2.drafts.size() == 1);
    CHECK(s2.drafts[0].seq == 9);
    CHECK(s2.drafts[0].tokens == std::vector<msg::token_id>{12, 13, 14});
    s.greedy_screened_tokens = 6;
    CHECK(round_trip(sys, s).greedy_screened_tokens == 6);

    msg::batcher_stats st;
    st.waiting = {1, 2, 3};
    st.kv_blocks_used = 5;
    auto st2 = round_trip(sys, st);
    CHECK(st2.waiting == st.waiting);
    CHECK(st2.kv_blocks_used == 5);
}

TEST_CASE("model lifecycle messages round-trip: load order, ticket, versions and operations") {
    test_config cfg;
    caf::actor_system sys{cfg};
    msg::load_order o{"tiny", "/models/b.gguf", "v2", false, "cpu", "/models/draft.gguf"};
    auto o2 = round_trip(sys, o);
    CHECK(o2.alias == "tiny");
    CHECK(o2.path == "/models/b.gguf");
    CHECK(o2.version == "v2");
    CHECK_FALSE(o2.warmup);
    CHECK(o2.device == "cpu");
    CHECK(o2.draft_path == "/models/draft.gguf");

    msg::operation_ticket t{"conflict", "busy", "op-3", "tiny", "", "warming"};
    auto t2 = round_trip(sys, t);
    CHECK(t2.refusal == "conflict");
    CHECK(t2.operation_id == "op-3");
    CHECK(t2.state == "warming");

    msg::model_status m;
    m.alias = "tiny";
    m.version = "v2";
    m.state = "ready";
    m.file_sha256 = std::string(64, 'a');
    msg::version_status v;
    v.version = "v1";
    v.state = "standby";
    v.info.weight_bytes = 1234;
    m.versions = {v};
    msg::operation_status op;
    op.id = "op-2";
    op.kind = "load";
    op.swap_us = 5678;
    op.failure = "why";
    m.operations = {op};
    auto m2 = round_trip(sys, m);
    CHECK(m2.file_sha256 == m.file_sha256);
    REQUIRE(m2.versions.size() == 1);
    CHECK(m2.versions[0].state == "standby");
    CHECK(m2.versions[0].info.weight_bytes == 1234);
    REQUIRE(m2.operations.size() == 1);
    CHECK(m2.operations[0].swap_us == 5678);
    CHECK(m2.operations[0].failure == "why");
}

TEST_CASE("errc survives caf::error with its message, CAF's errors map to the nearest errc") {
    test_config cfg;
    caf::actor_system sys{cfg};
    auto e = msg::to_caf_error(errc::queue_full, "12 requests waiting");
    CHECK(e.category() == msg::error_category());
    auto back = msg::from_caf_error(e);
    CHECK(back.value() == errc::queue_full);
    CHECK(back.message == "12 requests waiting");
    CHECK(sys.render(e).find("queue_full") != std::string::npos);
    CHECK(msg::retry_after_of(e) == 0);
    auto busy = msg::to_caf_error(errc::queue_full, "256 waiting", 7);
    CHECK(msg::retry_after_of(busy) == 7);
    CHECK(msg::from_caf_error(busy).message == "256 waiting");
    // The field at fault rides along (HTTP's `param`), without a Retry-After.
    auto field = msg::to_caf_error(bitnet::error{errc::invalid_argument, "id 600", "prompt"});
    CHECK(msg::from_caf_error(field).param == "prompt");
    CHECK(msg::from_caf_error(field).message == "id 600");
    CHECK(msg::retry_after_of(field) == 0);
    CHECK(sys.render(field).find("id 600") != std::string::npos);
    CHECK(msg::from_caf_error(e).param.empty());

    CHECK(msg::from_caf_error(caf::make_error(caf::sec::request_timeout)).value() == errc::timeout);
    CHECK(msg::from_caf_error(caf::make_error(caf::sec::request_receiver_down)).value() ==
          errc::cancelled);
    CHECK(msg::from_caf_error(caf::make_error(caf::sec::runtime_error)).value() == errc::internal);
}

TEST_CASE("a typed request carries our messages and our errors") {
    test_config cfg;
    caf::actor_system sys{cfg};
    // One unused spawn argument: CAF 0.17 dereferences a null argument tuple otherwise (UBSan).
    auto exec = sys.spawn(
        [](int /*unused*/) -> msg::executor_actor::behavior_type {
            return {
                [](msg::step_atom, msg::step_batch b) -> caf::result<msg::step_result> {
                    if (b.chunks.empty())
                        return msg::to_caf_error(errc::invalid_argument, "empty step");
                    msg::step_result r;
                    r.step = b.step;
                    r.samples.push_back({b.chunks[0].part.seq, 7, -1.0f, {}, {}});
                    return r;
                },
                [](msg::info_atom) { return msg::executor_info{}; },
                [](msg::warmup_atom, std::uint32_t) { return msg::warmup_report{}; },
            };
        },
        0);
    caf::scoped_actor self{sys};
    msg::step_batch b;
    b.step = 5;
    b.chunks.push_back({{1, {3}, 0, true}, {}});
    self->request(exec, std::chrono::seconds(5), msg::step_atom_v, b)
        .receive([](const msg::step_result& r) { CHECK(r.step == 5); },
                 [](const caf::error& err) { FAIL(caf::to_string(err)); });
    self->request(exec, std::chrono::seconds(5), msg::step_atom_v, msg::step_batch{})
        .receive([](const msg::step_result&) { FAIL("expected an error"); },
                 [](const caf::error& err) {
                     CHECK(msg::from_caf_error(err).value() == errc::invalid_argument);
                 });
    self->send_exit(exec, caf::exit_reason::user_shutdown);
}

TEST_CASE("executor and batcher orders are plain data: every field survives serialization") {
    test_config cfg;
    caf::actor_system sys{cfg};

    msg::executor_order e;
    e.alias = "bitnet";
    e.engine_kind = "gguf";
    e.engine.model_path = "models/m.gguf";
    e.engine.n_threads = 3;
    e.engine.kv_budget_bytes = 123ull << 20;
    e.engine.kv_block_tokens = 32;
    e.engine.max_batch_tokens = 1024;
    e.engine.q8_logits = true;
    e.engine.tl_kernel_config = "kernel_config.ini";
    e.device = "cuda";
    e.eog_ids = {2, 128009};
    e.file_sha256 = std::string(64, 'a');
    e.file = {1, 2, 3, -4, 5};
    const auto e2 = round_trip(sys, e);
    CHECK(e2.alias == e.alias);
    CHECK(e2.engine_kind == e.engine_kind);
    CHECK(e2.engine.model_path == e.engine.model_path);
    CHECK(e2.engine.n_threads == 3);
    CHECK(e2.engine.kv_budget_bytes == e.engine.kv_budget_bytes);
    CHECK(e2.engine.kv_block_tokens == 32);
    CHECK(e2.engine.max_batch_tokens == 1024);
    CHECK(e2.engine.q8_logits);
    CHECK(e2.engine.tl_kernel_config == e.engine.tl_kernel_config);
    CHECK(e2.device == "cuda");
    CHECK(e2.eog_ids == e.eog_ids);
    CHECK(e2.file_sha256 == e.file_sha256);
    CHECK(e2.file == e.file);

    msg::batcher_order b;
    b.model = "bitnet";
    b.model_version = "abc123";
    b.policy.max_batch_tokens = 256;
    b.policy.decoding_batch_tokens = 99;
    b.policy.max_batch_seqs = 12;
    b.policy.kv_block_tokens = 8;
    b.policy.kv_blocks_total = 77;
    b.policy.n_ctx = 2048;
    b.policy.weights = {9, 3, 1};
    b.policy.eog_ids = {7};
    b.default_timeout_ms = 5000;
    b.step_timeout_ms = 700;
    const auto b2 = round_trip(sys, b);
    CHECK(b2.model == b.model);
    CHECK(b2.model_version == b.model_version);
    CHECK(b2.policy.max_batch_tokens == 256);
    CHECK(b2.policy.decoding_batch_tokens == 99);
    CHECK(b2.policy.max_batch_seqs == 12);
    CHECK(b2.policy.kv_block_tokens == 8);
    CHECK(b2.policy.kv_blocks_total == 77);
    CHECK(b2.policy.n_ctx == 2048);
    CHECK(b2.policy.weights == b.policy.weights);
    CHECK(b2.policy.eog_ids == b.policy.eog_ids);
    CHECK(b2.default_timeout_ms == 5000);
    CHECK(b2.step_timeout_ms == 700);
    CHECK_FALSE(b2.step_observer);
}

TEST_CASE("a step chunk carries the engine's chunk and the request's sampling settings whole") {
    test_config cfg;
    caf::actor_system sys{cfg};
    msg::step_chunk c;
    c.part = {5, {1, 2, 3}, 9, false};
    c.params = msg::api_sampling_defaults();
    c.params.repeat_last_n = -1;
    c.params.repetition_penalty = 1.3f;
    c.params.presence_penalty = -0.5f;
    c.params.frequency_penalty = 1.25f;
    c.params.logit_bias = {{3, -100.0f}, {17, 42.5f}};
    c.params.min_tokens = 7;
    c.params.ignore_eos = true;
    c.params.eog_ids = {2, 9};
    c.params.stop_ids = {11};
    c.n_sampled = 4;
    const auto c2 = round_trip(sys, c);
    CHECK(c2.part.seq == 5);
    CHECK(c2.part.tokens == c.part.tokens);
    CHECK(c2.part.pos0 == 9);
    CHECK_FALSE(c2.part.want_logits);
    CHECK(c2.part.decoded_from == model::seq_chunk::never_decoded); // the default survives too
    CHECK(c2.params.temperature == c.params.temperature);
    CHECK(c2.params.top_k == c.params.top_k);
    CHECK(c2.params.top_p == c.params.top_p);
    CHECK(c2.params.min_p == c.params.min_p);
    CHECK(c2.params.repeat_last_n == -1);
    CHECK(c2.params.repetition_penalty == 1.3f);
    CHECK(c2.params.presence_penalty == -0.5f);
    CHECK(c2.params.frequency_penalty == 1.25f);
    CHECK(c2.params.logit_bias == c.params.logit_bias);
    CHECK(c2.params.min_tokens == 7);
    CHECK(c2.params.ignore_eos);
    CHECK(c2.params.eog_ids == c.params.eog_ids);
    CHECK(c2.params.stop_ids == c.params.stop_ids);
    CHECK(c2.n_sampled == 4);
}

TEST_CASE("an executor's info carries the kernel choice of every op whole") {
    test_config cfg;
    caf::actor_system sys{cfg};
    msg::executor_info i;
    i.device = "cpu";
    model::kernel_choice k;
    k.op = "ternary_prefill";
    k.family = "avx2";
    k.source = "measured";
    k.tokens = 128;
    k.timings = {{"avx2", 812.5}, {"avx512_vnni", 990.25}};
    i.kernels = {k, model::kernel_choice{}};
    const auto i2 = round_trip(sys, i);
    REQUIRE(i2.kernels.size() == 2);
    CHECK(i2.kernels[0].op == "ternary_prefill");
    CHECK(i2.kernels[0].family == "avx2");
    CHECK(i2.kernels[0].source == "measured");
    CHECK(i2.kernels[0].tokens == 128);
    REQUIRE(i2.kernels[0].timings.size() == 2);
    CHECK(i2.kernels[0].timings[1].family == "avx512_vnni");
    CHECK(i2.kernels[0].timings[1].micros == 990.25);
    CHECK(i2.kernels[1].op.empty());
}

TEST_CASE("prompt logprobs' fields survive serialization: all_logits, next_token, the echo "
          "flags, the scores and the echo event") {
    test_config cfg;
    caf::actor_system sys{cfg};
    msg::step_chunk c;
    c.part = {3, {1, 2, 3}, 0, false};
    c.part.all_logits = true;
    c.next_token = 42;
    const auto c2 = round_trip(sys, c);
    CHECK(c2.part.all_logits);
    CHECK(c2.next_token == 42);

    msg::generate_request g;
    g.echo = true;
    g.prompt_logprobs = true;
    const auto g2 = round_trip(sys, g);
    CHECK(g2.echo);
    CHECK(g2.prompt_logprobs);

    msg::step_result r;
    r.prompt_scores.push_back({3, 2, 7, -1.25f, {7, 9}, {-1.25f, -2.5f}});
    const auto r2 = round_trip(sys, r);
    REQUIRE(r2.prompt_scores.size() == 1);
    CHECK(r2.prompt_scores[0].seq == 3);
    CHECK(r2.prompt_scores[0].pos == 2);
    CHECK(r2.prompt_scores[0].token == 7);
    CHECK(r2.prompt_scores[0].logprob == -1.25f);
    CHECK(r2.prompt_scores[0].top_tokens == std::vector<msg::token_id>{7, 9});
    CHECK(r2.prompt_scores[0].top_logprobs == std::vector<float>{-1.25f, -2.5f});

    msg::token_event ev;
    ev.token = -1;
    ev.echo = {{1, 2}, {"a", "b"}, "ab", {0, 1}, {-0.5f}, 1, {2}, {-0.5f}, {"b"}};
    const auto ev2 = round_trip(sys, ev);
    CHECK(ev2.echo.tokens == ev.echo.tokens);
    CHECK(ev2.echo.pieces == ev.echo.pieces);
    CHECK(ev2.echo.text == "ab");
    CHECK(ev2.echo.text_offsets == ev.echo.text_offsets);
    CHECK(ev2.echo.logprobs == ev.echo.logprobs);
    CHECK(ev2.echo.n_top == 1);
    CHECK(ev2.echo.top_tokens == ev.echo.top_tokens);
    CHECK(ev2.echo.top_logprobs == ev.echo.top_logprobs);
    CHECK(ev2.echo.top_pieces == ev.echo.top_pieces);
}

TEST_CASE("a completion's finish reason crosses the wire as the value it was, each of them") {
    test_config cfg;
    caf::actor_system sys{cfg};
    using fr = msg::finish_reason;
    for (auto r : {fr::stop, fr::length, fr::eos, fr::cancelled, fr::deadline, fr::error}) {
        msg::completion c;
        c.id = 9;
        c.finish = r;
        c.stop_sequence = "END";
        const auto back = round_trip(sys, c);
        CHECK(back.finish == r);
        CHECK(back.stop_sequence == "END");
    }
    // The native API's words, and which reasons leave a turn unfinished.
    CHECK(std::string(to_string(fr::eos)) == "eos");
    CHECK(std::string(to_string(fr::deadline)) == "deadline");
    CHECK(std::string(to_string(fr::error)) == "error");
    CHECK(msg::ran_out(fr::length));
    CHECK(msg::ran_out(fr::deadline));
    CHECK_FALSE(msg::ran_out(fr::cancelled));
    CHECK_FALSE(msg::ran_out(fr::stop));
    CHECK_FALSE(msg::ran_out(fr::eos));
}

TEST_CASE("messages that carried several values of one type by position are named structs") {
    test_config cfg;
    caf::actor_system sys{cfg};
    const auto t = round_trip(sys, msg::tokenize_order{"hi <|x|>", false, true});
    CHECK(t.text == "hi <|x|>");
    CHECK_FALSE(t.add_bos);
    CHECK(t.parse_special);
    const auto p = round_trip(sys, msg::load_progress{7, "warming", "no room"});
    CHECK(p.serial == 7);
    CHECK(p.stage == "warming");
    CHECK(p.failure == "no room");
    const auto f = round_trip(sys, msg::alias_failure{"tiny", "bad file"});
    CHECK(f.alias == "tiny");
    CHECK(f.why == "bad file");
    const auto q = round_trip(sys, msg::replica_query{"tiny", "v2", caf::actor{}});
    CHECK(q.alias == "tiny");
    CHECK(q.version == "v2");
    CHECK_FALSE(q.gone);
}
