#pragma once
// Border modes: how pixels outside the image are read (SPEC.md, "Borders"). Names as SciPy; OpenCV's
// names are accepted as aliases.
#include <optional>
#include <string_view>

namespace apron {

enum class BorderMode : unsigned char { constant, nearest, reflect, mirror, wrap };

const char* to_string(BorderMode m);
std::optional<BorderMode> parse_border_mode(std::string_view name);
// "constant|zero, nearest|replicate|clamp, ..." for help texts.
const char* border_mode_names();

} // namespace apron
