#!/usr/bin/env bash
# Fails when a room includes a header it may not (the "may include / never" columns of the
# architecture map, §1). Only #include lines are read, so it is a grep, not a compiler: it needs
# nothing but bash and grep and takes well under a second, which is why CI runs it first.
#
# usage: check-layering.sh [ROOT]   (ROOT: the source tree, default the repository this script is in)
# exit:  0 clean, 1 with one "file:line: #include ...  [rule]" line per violation on stderr,
#        2 when ROOT is not a source tree.
set -euo pipefail

root="${1:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
if [ ! -d "$root/kernels" ] || [ ! -d "$root/model" ]; then
    echo "check-layering: $root is not a bitnet-serve source tree (no kernels/ or model/)" >&2
    exit 2
fi
cd "$root"

# Our headers are included from the repository root ("model/engine/engine.hpp"), so the first path
# component of an include names its room. Angle brackets are matched too: a room header spelled
# <model/engine/engine.hpp> is the same dependency.
ours='[<"]'
caf_or_net='<(caf/|boost/beast|boost/asio)'

# One rule a line: ROOM;ERE matched against the text after "#include";what the rule says
# (";" separates: "|" is the regex alternation).
# Rooms and dependencies not listed here are allowed on purpose:
#   model -> kernels, common          the model is built on the kernels
#   model/ sub-rooms: gguf <- tokenizer <- engine; sampling stands alone; engine -> all three;
#                     constrain -> tokenizer (and what it includes)
#   messages -> model, common, CAF    model value types only (sampling_params, seq_chunk), as the map allows
#   actors -> messages, model, kernels, common, CAF
#   http -> messages, common, CAF, Beast/Asio (http bridges asio threads to actors)
rules=(
    "kernels;${ours}(model|messages|actors|http|conf|tools)/;kernels/ may include common/ only of ours"
    "kernels;${caf_or_net};kernels/ must not include CAF, Beast or Asio"
    "model;${ours}(actors|http|messages)/;model/ must not include actors/, http/ or messages/"
    "model;${caf_or_net};model/ must not include CAF, Beast or Asio"
    "model/gguf;${ours}model/(tokenizer|sampling|engine)/;model/gguf/ (the file format) must not include the model sub-rooms above it"
    "model/tokenizer;${ours}model/(sampling|engine)/;model/tokenizer/ may include model/gguf/ only of the model sub-rooms"
    "model/sampling;${ours}model/(gguf|tokenizer|engine)/;model/sampling/ must not include the other model sub-rooms"
    # constrain masks the vocabulary, so it reads the tokenizer's pieces; it knows nothing of the
    # engine or the sampler (the executor applies its mask to the logits before sampling).
    "model/constrain;${ours}model/(sampling|engine)/;model/constrain/ may include model/tokenizer/ only of the model sub-rooms"
    "http;${ours}(model|kernels)/;http/ must not include model/ or kernels/ (it talks to messages/)"
    "actors;${ours}http/;actors/ must not include http/"
    "messages;${ours}(actors|http)/;messages/ must not include actors/ or http/"
)

# An #include directive: optional blanks, '#', optional blanks, 'include', optional blanks.
directive='^[[:space:]]*#[[:space:]]*include[[:space:]]*'
sources=(--include='*.hpp' --include='*.cpp' --include='*.h' --include='*.cc'
         --include='*.cu' --include='*.cuh' --include='*.ipp' --include='*.inl')

violations=0
for rule in "${rules[@]}"; do
    IFS=';' read -r room pattern what <<<"$rule"
    [ -d "$room" ] || continue
    # grep -rn prints "path:line:text"; exit 1 means no match, anything above is a real error.
    hits=$(grep -rnE "${sources[@]}" "${directive}${pattern}" "$room" || [ $? -eq 1 ])
    [ -n "$hits" ] || continue
    while IFS= read -r hit; do
        [[ "$hit" =~ ^([^:]+):([0-9]+):[[:space:]]*(.*)$ ]]
        echo "${BASH_REMATCH[1]}:${BASH_REMATCH[2]}: ${BASH_REMATCH[3]}  [${what}]" >&2
        violations=$((violations + 1))
    done <<<"$hits"
done

if [ "$violations" -gt 0 ]; then
    echo "check-layering: $violations forbidden include(s); rooms and their allowed dependencies are in the architecture notes, §1" >&2
    exit 1
fi
echo "check-layering: ok"
