#include "apron/border.hpp"

namespace apron {

const char* to_string(BorderMode m) {
    switch (m) {
    case BorderMode::constant: return "constant";
    case BorderMode::nearest: return "nearest";
    case BorderMode::reflect: return "reflect";
    case BorderMode::mirror: return "mirror";
    case BorderMode::wrap: return "wrap";
    }
    return "?";
}

std::optional<BorderMode> parse_border_mode(std::string_view s) {
    if (s == "constant" || s == "zero") return BorderMode::constant;
    if (s == "nearest" || s == "replicate" || s == "clamp" || s == "edge") return BorderMode::nearest;
    if (s == "reflect" || s == "symmetric") return BorderMode::reflect;
    if (s == "mirror" || s == "reflect101" || s == "reflect_101") return BorderMode::mirror;
    if (s == "wrap" || s == "periodic") return BorderMode::wrap;
    return std::nullopt;
}

const char* border_mode_names() {
    return "constant|zero, nearest|replicate|clamp, reflect|symmetric, mirror|reflect101, wrap|periodic";
}

} // namespace apron
