#!/usr/bin/env bash
# Fails when a room includes a header it may not (the "may include / never" columns of the
# architecture map, docs/ARCHITECTURE.md §1). Only #include lines are read, so it is a grep, not a compiler: it needs
# nothing but bash and grep and takes well under a second, which is why CI runs it first.
#
# usage: check-layering.sh [ROOT]   (ROOT: the source tree, default the repository this script is in)
#        check-layering.sh --print-rules   (the rules, one "ROOMS;ERE;what" line each, and exit:
#        tests/ci/layering_map_test.sh compares them with the table of docs/ARCHITECTURE.md §1)
# exit:  0 clean, 1 with one "file:line: #include ...  [rule]" line per violation on stderr,
#        2 when ROOT is not a source tree.
set -euo pipefail

print_rules=false
if [ "${1:-}" = "--print-rules" ]; then
    print_rules=true
    shift
fi
root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
if ! $print_rules && { [ ! -d "$root/kernels" ] || [ ! -d "$root/model" ]; }; then
    echo "check-layering: $root is not a bitnet-serve source tree (no kernels/ or model/)" >&2
    exit 2
fi
cd "$root"

# Our headers are included from the repository root ("model/engine/engine.hpp"), so the first path
# component of an include names its room. Angle brackets are matched too: a room header spelled
# <model/engine/engine.hpp> is the same dependency.
ours='[<"]'
caf_or_net='<(caf/|boost/beast|boost/asio)'

# One rule a line: ROOMS;ERE matched against the text after "#include";what the rule says
# (";" separates: "|" is the regex alternation). ROOMS is one or more folders separated by blanks;
# a folder is read with its sub-folders, FOLDER/* is its own files only (a room's shared files,
# beside its sub-rooms).
# Rooms and dependencies not listed here are allowed on purpose:
#   common -> nothing of ours         every room may build on it
#   conf -> common
#   model -> kernels, common          the model is built on the kernels
#   model/ sub-rooms: gguf <- tokenizer <- engine; jinja <- tokenizer; sampling stands alone;
#                     engine -> all three;
#                     constrain -> tokenizer (and what it includes)
#   messages -> model, common, CAF    model value types only (sampling_params, seq_chunk), as the map allows
#   actors -> messages, model, kernels, common, CAF
#   actors/ sub-rooms: cluster <- batcher <- supervisor <- admission, executor <- supervisor;
#                      all -> actors/' shared files (trace_spans)
#   http -> messages, common, CAF, Beast/Asio (http bridges asio threads to actors)
#   http/ sub-rooms: observe <- shared files <- openai, anthropic, responses, transport <- routes
#   model/engine/ sub-rooms: weights <- shared files <- cpu, cuda <- placement
rules=(
    "common;${ours}(kernels|model|messages|actors|http|conf|tools)/;common/ must not include another room (every room builds on it)"
    "kernels;${ours}(model|messages|actors|http|conf|tools)/;kernels/ may include common/ only of ours"
    "kernels;${caf_or_net};kernels/ must not include CAF, Beast or Asio"
    "model;${ours}(actors|http|messages)/;model/ must not include actors/, http/ or messages/"
    "model;${caf_or_net};model/ must not include CAF, Beast or Asio"
    # conf/ is read by the tools, which hand each room its options; tools/ is the top.
    "model messages actors http;${ours}(conf|tools)/;only tools/ may include conf/ or tools/"
    "conf;${ours}(kernels|model|messages|actors|http|tools)/;conf/ may include common/ only of ours"
    "model/gguf;${ours}model/(tokenizer|sampling|engine)/;model/gguf/ (the file format) must not include the model sub-rooms above it"
    "model/tokenizer;${ours}model/(sampling|engine)/;model/tokenizer/ may include model/gguf/ and model/jinja/ only of the model sub-rooms"
    # The chat-template interpreter is plain Jinja: it knows no model file, tokenizer or engine.
    "model/jinja;${ours}model/(gguf|tokenizer|sampling|engine|constrain)/;model/jinja/ must not include the other model sub-rooms"
    "model/sampling;${ours}model/(gguf|tokenizer|engine)/;model/sampling/ must not include the other model sub-rooms"
    # constrain masks the vocabulary, so it reads the tokenizer's pieces; it knows nothing of the
    # engine or the sampler (the executor applies its mask to the logits before sampling).
    "model/constrain;${ours}model/(sampling|engine)/;model/constrain/ may include model/tokenizer/ only of the model sub-rooms"
    # model/engine/: the shared files are what both engines build on; each engine stands alone.
    "model/engine/weights;${ours}model/engine/([a-z_]+\.hpp|cpu/|cuda/|placement/);model/engine/weights/ (the ternary layouts) must not include the rest of the engine"
    "model/engine/*;${ours}model/engine/(cpu|cuda|placement)/;model/engine/'s shared files must not include an engine or placement/"
    "model/engine/cpu;${ours}model/engine/(cuda|placement)/;model/engine/cpu/ must not include the CUDA engine or placement/"
    "model/engine/cuda;${ours}model/engine/(cpu|placement)/;model/engine/cuda/ must not include the CPU engine or placement/"
    "http;${ours}(model|kernels)/;http/ must not include model/ or kernels/ (it talks to messages/)"
    "http;${ours}actors/;http/ must not include actors/ (it talks to them through messages/)"
    # http/: observe at the bottom, the families' shared files above it, each family and the
    # transport on those, routes on top; one API family never includes another.
    "http/observe;${ours}http/([a-z_]+\.hpp|openai/|anthropic/|responses/|transport/|routes/);http/observe/ must not include the rest of http/"
    "http/*;${ours}http/(openai|anthropic|responses|transport|routes|ui)/;http/'s shared files may include http/observe/ only of its sub-rooms"
    # http/ui/ is the web page's bytes and their table: data, below everything that serves it.
    "http/ui;${ours}(model|kernels|messages|actors|conf|tools|common)/;http/ui/ (the web page's files) includes no other room"
    "http/ui;${ours}http/([a-z_]+\.hpp|openai/|anthropic/|responses/|transport/|routes/|observe/);http/ui/ (the web page's files) includes nothing of http/ but its own headers"
    "http/openai;${ours}http/(anthropic|responses|transport|routes)/;http/openai/ (an API family) must not include another family, transport/ or routes/"
    "http/anthropic;${ours}http/(openai|responses|transport|routes)/;http/anthropic/ (an API family) must not include another family, transport/ or routes/"
    "http/responses;${ours}http/(openai|anthropic|transport|routes)/;http/responses/ (an API family) must not include another family, transport/ or routes/"
    "http/transport;${ours}http/(openai|anthropic|responses|routes)/;http/transport/ must not include the API families or routes/"
    "actors;${ours}http/;actors/ must not include http/"
    # actors/: one sub-room per actor; the cluster is the only one that knows CAF remoting.
    "actors/*;${ours}actors/[a-z_]+/;actors/'s shared files must not include its sub-rooms"
    "actors/cluster;${ours}actors/(admission|batcher|executor|supervisor)/;actors/cluster/ may include actors/'s shared files only of the actors"
    "actors/executor;${ours}actors/(admission|batcher|supervisor|cluster)/;actors/executor/ may include actors/'s shared files only of the actors"
    "actors/batcher;${ours}actors/(admission|supervisor|executor)/;actors/batcher/ may include actors/cluster/ (the peer gate) only of the actor sub-rooms"
    "actors/supervisor;${ours}actors/admission/;actors/supervisor/ must not include actors/admission/"
    "actors/* actors/admission actors/batcher actors/executor actors/supervisor;<caf/(io|openssl)/;only actors/cluster/ may include CAF remoting (caf/io, caf/openssl)"
    "messages;${ours}(actors|http)/;messages/ must not include actors/ or http/"
)

# An #include directive: optional blanks, '#', optional blanks, 'include', optional blanks.
directive='^[[:space:]]*#[[:space:]]*include[[:space:]]*'
sources=(--include='*.hpp' --include='*.cpp' --include='*.h' --include='*.cc'
         --include='*.cu' --include='*.cuh' --include='*.ipp' --include='*.inl')

if $print_rules; then
    printf '%s\n' "${rules[@]}"
    exit 0
fi

violations=0
# The files a room spec names, one per line: a folder with its sub-folders, or FOLDER/* its own
# files only.
room_files() {
    local spec="$1"
    if [[ "$spec" == */\* ]]; then
        local dir="${spec%/\*}"
        [ -d "$dir" ] && find "$dir" -maxdepth 1 -type f \( -name '*.hpp' -o -name '*.cpp' -o \
            -name '*.h' -o -name '*.cc' -o -name '*.cu' -o -name '*.cuh' -o -name '*.ipp' -o \
            -name '*.inl' \) | sort
    elif [ -d "$spec" ]; then
        echo "$spec"
    fi
}

for rule in "${rules[@]}"; do
    IFS=';' read -r rooms pattern what <<<"$rule"
    targets=()
    read -ra room_list <<<"$rooms" # split on blanks, never glob "FOLDER/*"
    for room in "${room_list[@]}"; do
        while IFS= read -r f; do
            [ -n "$f" ] && targets+=("$f")
        done < <(room_files "$room")
    done
    [ "${#targets[@]}" -gt 0 ] || continue
    # grep -rn prints "path:line:text"; exit 1 means no match, anything above is a real error.
    hits=$(grep -rnHE "${sources[@]}" "${directive}${pattern}" "${targets[@]}" || [ $? -eq 1 ])
    [ -n "$hits" ] || continue
    while IFS= read -r hit; do
        [[ "$hit" =~ ^([^:]+):([0-9]+):[[:space:]]*(.*)$ ]]
        echo "${BASH_REMATCH[1]}:${BASH_REMATCH[2]}: ${BASH_REMATCH[3]}  [${what}]" >&2
        violations=$((violations + 1))
    done <<<"$hits"
done

if [ "$violations" -gt 0 ]; then
    echo "check-layering: $violations forbidden include(s); rooms and their allowed dependencies are in docs/ARCHITECTURE.md §1" >&2
    exit 1
fi
echo "check-layering: ok"
