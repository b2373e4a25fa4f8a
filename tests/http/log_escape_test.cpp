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
