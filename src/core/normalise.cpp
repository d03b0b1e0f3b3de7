// The names of a linear step's normalisations (apron/ops.hpp): the planner and the registry both use them.
#include <optional>
#include <string_view>

#include "apron/ops.hpp"

namespace apron {

const char* to_string(Normalise n) {
    switch (n) {
    case Normalise::none: return "none";
    case Normalise::sum: return "sum";
    case Normalise::book: return "book";
    }
    return "?";
}

std::optional<Normalise> parse_normalise(std::string_view s) {
    if (s == "none") return Normalise::none;
    if (s == "sum") return Normalise::sum;
    if (s == "book") return Normalise::book;
    return std::nullopt;
}

} // namespace apron
