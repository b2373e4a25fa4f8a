// Model loading against hostile or changing files, on the real binary: a served file truncated or
// overwritten in place, files that change while they load, paths that are not regular files, a
// shutdown during a long load, failed loads piling up, NUL bytes in paths and failure reasons that
// must not echo a file's bytes. Waits are bounded polls for a state; no assertion is about time.
#include "server/model_admin.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>

#include <sys/stat.h>

using namespace bitnet;
using test::generate;
using test::load_and_wait;
using test::load_body;
using test::make_model;
using test::model;
using test::wait_op;

namespace {

/// Overwrites `path` in place (the same inode) with `bytes`, as `cp new.gguf path` does.
void overwrite_in_place(const std::string& path, const std::vector<std::uint8_t>& bytes) {
    std::ofstream out(path, std::ios::binary | std::ios::trunc);
    out.write(reinterpret_cast<const char*>(bytes.data()),
              static_cast<std::streamsize>(bytes.size()));
}

std::string op_id(const test::http_reply& r) {
    return std::string(test::parse_object(r.body).at("operation_id").as_string());
}

bool contains(const std::vector<std::string>& v, const std::string& x) {
    return std::find(v.begin(), v.end(), x) != v.end();
}

/// The state of operation `id` on the alias "tiny" ("" while it is not listed).
std::string op_state(const test::server_process& s, const std::string& id) {
    const auto m = test::parse_object(s.get("/v1/models/tiny").body);
    for (const auto& op : m.at("operations").as_array())
        if (op.as_object().at("id").as_string() == id)
            return std::string(op.as_object().at("state").as_string());
    return {};
}

/// Every alias /v1/models lists.
std::vector<std::string> listed(const test::server_process& s) {
    std::vector<std::string> out;
    const auto list = test::parse_object(s.get("/v1/models").body);
    for (const auto& m : list.at("data").as_array())
        out.emplace_back(m.as_object().at("id").as_string());
    return out;
}

/// The lines of `log` that hold every one of `parts`.
std::vector<std::string> lines_with(const std::string& log, const std::vector<std::string>& parts) {
    std::vector<std::string> out;
    std::size_t at = 0;
    while (at < log.size()) {
        const auto end = std::min(log.find('\n', at), log.size());
        const std::string line = log.substr(at, end - at);
        if (std::all_of(parts.begin(), parts.end(),
                        [&](const std::string& p) { return line.find(p) != std::string::npos; }))
            out.push_back(line);
        at = end + 1;
    }
    return out;
}

/// The server's log once it holds a line with every one of `parts` (bounded: the line is written
/// before the state the test waited for is visible, so this only covers stdio's buffering).
std::string log_once_it_has(const test::server_process& s, const std::vector<std::string>& parts) {
    (void)test::eventually([&] { return !lines_with(s.log(), parts).empty(); },
                           std::chrono::seconds(10));
    return s.log();
}

} // namespace

TEST_CASE("a start-up model that cannot load is logged: a warning at each restart, then an error") {
    test::scratch_dir dir;
    const auto text = dir.file("not-a-model.txt");
    const std::string words = "hello, not a model\n";
    test::write_file(text, {words.begin(), words.end()});
    auto lo = test::ready_once_load_failed();
    lo.model_flag = false;
    test::server_process s({"--model", "broken=" + text}, lo);
    const auto m = model(s, "broken");
    REQUIRE(m.at("state").as_string() == "failed");
    const auto restarts = m.at("restarts").to_number<std::int64_t>();
    CHECK(restarts >= 1);
    const auto log =
        log_once_it_has(s, {"[error]", "model 'broken'", "failed after", "not a GGUF file"});
    INFO(log);
    // Without these lines an operator reading the log saw the server listen and nothing more.
    const auto warnings = lines_with(log, {"[warning]", "model 'broken'", "restarting it ("});
    CHECK(static_cast<std::int64_t>(warnings.size()) == restarts);
    for (const auto& w : warnings)
        CHECK(w.find("not a GGUF file") != std::string::npos);
    CHECK(lines_with(log, {"[error]", "model 'broken'",
                           "failed after " + std::to_string(restarts) + " restart(s)",
                           "not a GGUF file"})
              .size() == 1);
    CHECK(s.get("/health/ready").status == 503);
    CHECK(s.alive());
}

TEST_CASE("a served file truncated or overwritten in place: the server keeps serving from memory") {
    test::scratch_dir dir;
    test::server_process s;
    const auto before = generate(s, "tiny", "Hello");
    const auto original = test::read_file(s.model_path());
    REQUIRE(original.size() > 4096);

    std::filesystem::resize_file(s.model_path(), 0);
    CHECK(generate(s, "tiny", "Hello") == before);
    CHECK(s.alive());

    // Other bytes of the same length in the same inode (what `cp other.gguf served.gguf` does).
    const auto other = test::read_file(make_model(dir, "other.gguf", "--seed 7"));
    overwrite_in_place(s.model_path(), other);
    CHECK(generate(s, "tiny", "Once upon a time").second == before.second);
    CHECK(generate(s, "tiny", "Hello") == before);
    std::vector<std::uint8_t> noise(original.size());
    for (std::size_t i = 0; i < noise.size(); ++i)
        noise[i] = static_cast<std::uint8_t>(i * 131 + 7);
    overwrite_in_place(s.model_path(), noise);
    CHECK(generate(s, "tiny", "Hello") == before);
    REQUIRE(s.alive());
    CHECK(s.get("/health/ready").status == 200);
}

TEST_CASE("a file truncated while it loads fails that load or loads whole, the server lives") {
    test::scratch_dir dir;
    test::server_process s;
    const auto source = test::read_file(make_model(dir, "b.gguf", "--seed 2", "small"));
    // The truncation lands somewhere in the load: at once (the hash sees it), once the load has
    // moved past hashing (validation, the engine's read of the weights), or once the engine has
    // read the file (warm-up, or after the flip). Each round ends in a clean failure or a version
    // that serves from memory.
    for (int round = 0; round < 6; ++round) {
        INFO("round " << round);
        const auto path = dir.file("shrinking-" + std::to_string(round) + ".gguf");
        test::write_file(path, source);
        auto r = s.post("/v1/models/load", load_body("tiny", path));
        REQUIRE_MESSAGE(r.status == 202, r.body);
        const auto id = op_id(r);
        // Round 0, 3: at once; 1, 4: once hashed; 2, 5: once the engine has read the file.
        const std::vector<std::vector<std::string>> wait_past{
            {}, {"loading"}, {"loading", "validating"}};
        const auto& past = wait_past[static_cast<std::size_t>(round % 3)];
        for (int i = 0; i < 3000 && contains(past, op_state(s, id)); ++i)
            std::this_thread::sleep_for(std::chrono::milliseconds(1));
        std::filesystem::resize_file(path, source.size() / (2 + round));
        const auto op = wait_op(s, "tiny", id);
        const auto state = std::string(op.at("state").as_string());
        CHECK((state == "failed" || state == "ready"));
        CHECK(s.post("/v1/inference", test::greedy("tiny", "Hello", 4)).status == 200);
        REQUIRE_MESSAGE(s.alive(), s.log());
        CHECK(model(s, "tiny").at("state").as_string() == "ready");
    }
}

TEST_CASE("paths that are not regular files fail at once with the reason, the alias stays usable") {
    test::scratch_dir dir;
    test::server_process s;
    const auto fifo = dir.file("never-written.fifo");
    REQUIRE(::mkfifo(fifo.c_str(), 0600) == 0);
    std::filesystem::create_directory(dir.file("a-directory"));
    for (const auto& path :
         {std::string("/dev/zero"), std::string("/dev/urandom"), fifo, dir.file("a-directory")}) {
        INFO(path);
        const auto op = load_and_wait(s, "odd", path);
        CHECK(op.at("state").as_string() == "failed");
        CHECK(std::string(op.at("failure").as_string()).find("not a regular file") !=
              std::string::npos);
    }
    // Nothing holds the alias: the next load on it runs and serves.
    const auto good = load_and_wait(s, "odd", s.model_path());
    CHECK(good.at("state").as_string() == "ready");
    CHECK(generate(s, "odd", "Hello").first == generate(s, "tiny", "Hello").first);
}

TEST_CASE("a load path holding a newline cannot forge a line in the text log") {
    test::server_process s;
    const std::string forged = "[2026-01-01 00:00:00.000] [error] FORGED by a client";
    const auto op = load_and_wait(s, "odd", "/nonexistent/model\n" + forged + "\x1b[2J.gguf");
    CHECK(op.at("state").as_string() == "failed");
    // The failure is logged with the path escaped on its own line: no line starts with the
    // forged text, and no escape sequence reaches the terminal.
    REQUIRE(test::eventually([&] { return s.log().find("\\n" + forged) != std::string::npos; }));
    const auto log = s.log();
    CHECK(log.find("\n" + forged) == std::string::npos);
    CHECK(log.find("\x1b[2J") == std::string::npos);
    CHECK(log.find("\\x1b[2J") != std::string::npos);
}

TEST_CASE("a file with the GGUF magic but no valid header fails before it is hashed") {
    // The magic, then a version no GGUF writer uses, then a sparse terabyte: hashing it whole
    // would take hours, so the load can only end now if the header is read first.
    test::scratch_dir dir;
    test::server_process s;
    const auto fake = dir.file("fake.gguf");
    const std::vector<std::uint8_t> header{'G', 'G', 'U', 'F', 99, 0, 0, 0};
    test::write_file(fake, header);
    std::filesystem::resize_file(fake, std::uintmax_t{1} << 40);
    const auto op = load_and_wait(s, "fake", fake);
    CHECK(op.at("state").as_string() == "failed");
    CHECK(std::string(op.at("failure").as_string()).find("not a valid GGUF file") !=
          std::string::npos);
}

TEST_CASE("SIGTERM while a long load hashes: the server exits within the drain timeout") {
    test::scratch_dir dir;
    test::server_process s({"--drain-timeout-ms", "1000"});
    const auto huge = test::endless_load_file(dir, s);
    auto r = s.post("/v1/models/load", load_body("huge", huge));
    REQUIRE_MESSAGE(r.status == 202, r.body);
    CHECK(model(s, "huge").at("state").as_string() == "loading");
    // signal_and_wait polls for the exit a bounded number of times (-1: it never came).
    CHECK(s.signal_and_wait(SIGTERM) == 0);
}

TEST_CASE("failed loads stay bounded: per alias, across aliases, and in /health") {
    test::scratch_dir dir;
    test::server_process s;
    const auto missing = dir.file("missing.gguf");
    for (int i = 0; i < 40; ++i)
        CHECK(load_and_wait(s, "junk", missing).at("state").as_string() == "failed");
    const auto junk = model(s, "junk");
    CHECK(junk.at("operations").as_array().size() <= 16);
    CHECK(junk.at("versions").as_array().size() <= 8);

    // Aliases that never served are a bounded set too: the oldest are forgotten.
    auto fail_aliases = [&](int from, int to) {
        for (int i = from; i < to; ++i)
            CHECK(load_and_wait(s, "junk-" + std::to_string(i), missing).at("state").as_string() ==
                  "failed");
    };
    fail_aliases(10, 50);
    const auto names = listed(s);
    CHECK(names.size() <= 1 + 16); // tiny and the newest failed-only aliases
    CHECK(contains(names, "tiny"));
    CHECK(contains(names, "junk-49"));
    CHECK(!contains(names, "junk-10"));
    // Admission forgets them with the listings: a forgotten alias is unknown again (404), a kept
    // one is still a model that failed (503).
    CHECK(s.post("/v1/completions", R"({"model":"junk-10","prompt":"Hi","max_tokens":1})").status ==
          404);
    CHECK(s.post("/v1/completions", R"({"model":"junk-49","prompt":"Hi","max_tokens":1})").status ==
          503);
    // Twenty more leave /health (unauthenticated) where it was: the same bounded set, renamed.
    const auto health_40 = s.get("/health").body.size();
    fail_aliases(50, 70);
    CHECK(s.get("/health").body.size() <= health_40 + 256);
    CHECK(s.get("/health/ready").status == 200);
}

TEST_CASE("DELETE on an alias that never served clears it") {
    test::scratch_dir dir;
    test::server_process s;
    CHECK(load_and_wait(s, "ghost", dir.file("missing.gguf")).at("state").as_string() == "failed");
    REQUIRE(contains(listed(s), "ghost"));
    const auto del = s.del("/v1/models/ghost");
    CHECK_MESSAGE((del.status == 200 || del.status == 202), del.body);
    CHECK(s.get("/v1/models/ghost").status == 404);
    CHECK(!contains(listed(s), "ghost"));
    CHECK(s.get("/health").body.find("\"ghost\"") == std::string::npos);
    CHECK(s.del("/v1/models/ghost").status == 404);
    // The serving alias is untouched, and the name can load again.
    CHECK(model(s, "tiny").at("state").as_string() == "ready");
    CHECK(load_and_wait(s, "ghost", s.model_path()).at("state").as_string() == "ready");
}

TEST_CASE("a load path with a NUL byte is refused with 400") {
    test::scratch_dir dir;
    test::server_process s;
    // JSON's \u0000 inside the path: a C string would silently end at it (here: at the model).
    const auto body = R"({"alias":"nul","path":)" +
                      boost::json::serialize(boost::json::value(s.model_path()))
                          .insert(s.model_path().size() + 1, "\\u0000.txt") +
                      "}";
    const auto r = s.post("/v1/models/load", body);
    CHECK_MESSAGE(r.status == 400, r.body);
    CHECK(s.get("/v1/models/nul").status == 404);
}

TEST_CASE("a failed load's reason describes the file without echoing its bytes") {
    test::scratch_dir dir;
    test::server_process s;
    const auto text = dir.file("secret.txt");
    const std::string secret = "Zq9!topsecret-line-one\nroot:x:0:0:root:/root:/bin/bash\n";
    test::write_file(text, {secret.begin(), secret.end()});
    const auto op = load_and_wait(s, "text", text);
    CHECK(op.at("state").as_string() == "failed");
    const std::string why(op.at("failure").as_string());
    CHECK(why.find("not a GGUF file") != std::string::npos);
    CHECK(why.find("Zq9!") == std::string::npos);
    CHECK(why.find("Zq9") == std::string::npos);
    CHECK(why.find("root") == std::string::npos);
    CHECK(s.get("/v1/models/text").body.find("Zq9") == std::string::npos);
    // The log names the failed load as well, and echoes no more of the file than the reply.
    const auto log = log_once_it_has(s, {"[error]", "model 'text'", "failed: ", "not a GGUF file"});
    CHECK(lines_with(log, {"[error]", "model 'text'", "failed: ", "not a GGUF file"}).size() == 1);
    CHECK(log.find("Zq9") == std::string::npos);
    CHECK(log.find("root:x") == std::string::npos);
}
