// Text logs escape the control characters of a message (log_context.hpp, escape_controls): what
// a client sent cannot end a log line and start a forged one, nor move a terminal's cursor.
#include "http/observe/log_context.hpp"

#include <doctest/doctest.h>

#include <string>

using bitnet::http::escape_controls;

TEST_CASE("escape_controls: C0, DEL and C1 controls escaped, every other byte kept") {
    CHECK(escape_controls("model 'tiny' ready") == "model 'tiny' ready");
    CHECK(escape_controls("a\nb") == "a\\nb");
    CHECK(escape_controls("x\r\n[2026-01-01 00:00:00.000] [error] forged") ==
          "x\\r\\n[2026-01-01 00:00:00.000] [error] forged");
    CHECK(escape_controls("tab\there") == "tab\\there");
    CHECK(escape_controls(std::string("nul\0end", 7)) == "nul\\x00end");
    CHECK(escape_controls("\x1b[2Jclear") == "\\x1b[2Jclear");
    CHECK(escape_controls("del\x7f") == "del\\x7f");
    // C1 controls in UTF-8 (U+0085 NEL, U+009B CSI) are escaped as their code points.
    CHECK(escape_controls("nel\xC2\x85"
                          "csi\xC2\x9B") == "nel\\x85csi\\x9b");
    // Printable UTF-8 stays: é, a no-break space (C2 A0), a CJK character; a lone C2 at the end.
    CHECK(escape_controls("caf\xC3\xA9 \xC2\xA0 \xE6\xBC\xA2") ==
          "caf\xC3\xA9 \xC2\xA0 \xE6\xBC\xA2");
    CHECK(escape_controls("end\xC2") == "end\xC2");
}

TEST_CASE("escape_controls: line and paragraph separators and bidi controls are escaped") {
    // U+2028, U+2029: line ends to a JavaScript log reader.
    CHECK(escape_controls("a\xE2\x80\xA8"
                          "b\xE2\x80\xA9"
                          "c") == "a\\u2028b\\u2029c");
    // The bidirectional controls reorder what a terminal shows ("Trojan Source").
    CHECK(escape_controls("\xE2\x80\xAE"
                          "evil") == "\\u202eevil");                          // RLO
    CHECK(escape_controls("\xE2\x81\xA6x\xE2\x81\xA9") == "\\u2066x\\u2069"); // LRI .. PDI
    CHECK(escape_controls("\xE2\x80\x8E\xE2\x80\x8F") == "\\u200e\\u200f");   // LRM, RLM
    CHECK(escape_controls("\xD8\x9C") == "\\u061c");                          // ALM
    // Their neighbours stay: an en dash (U+2013), a zero-width joiner (U+200D), U+2070.
    CHECK(escape_controls("\xE2\x80\x93\xE2\x80\x8D\xE2\x81\xB0") ==
          "\xE2\x80\x93\xE2\x80\x8D\xE2\x81\xB0");
    CHECK(escape_controls("cut\xE2\x80") == "cut\xE2\x80"); // a truncated sequence is kept
}

TEST_CASE("cut_log_message: a long message is cut at a character, saying how much was left out") {
    using bitnet::http::cut_log_message;
    using bitnet::http::max_log_message_bytes;
    CHECK(cut_log_message("short") == "short");
    const std::string name(900 * 1024, 'm');
    const auto cut = cut_log_message("no model '" + name + "'");
    CHECK(cut.size() < max_log_message_bytes + 64);
    CHECK(cut.find("more bytes not logged") != std::string::npos);
    // Never inside a character: 'é' is two bytes.
    std::string accents;
    while (accents.size() < max_log_message_bytes + 10)
        accents += "\xC3\xA9";
    const auto cut2 = cut_log_message("x" + accents);
    CHECK(cut2.find("\xC3...") == std::string::npos);
    CHECK(cut2.substr(0, cut2.find("...")).size() % 2 == 1);
}
