// Builds a pipeline through apron's public API and checks its result against values computed by hand.
//
// The input is a horizontal ramp, 5 * x on every row of a 37x23 u8 image. A Gaussian is symmetric and its
// weights sum to 1, so away from the borders (its radius is ceil(3 sigma) = 3) it leaves a linear ramp as it
// is: 5 * x for 3 <= x <= 33. A 3x3 dilation then takes the largest of x-1, x, x+1: 5 * (x + 1), wherever
// all three are inside that range (4 <= x <= 32), on every row (the image does not change along y).
#include <apron/errors.hpp>
#include <apron/pipeline.hpp>

#include <cstdint>
#include <cstdio>

int main() {
    const int width = 37, height = 23;
    apron::Image input(width, height, 1, apron::PixelType::u8);
    for (int y = 0; y < height; ++y)
        for (int x = 0; x < width; ++x) input.row<std::uint8_t>(y)[x] = static_cast<std::uint8_t>(5 * x);

    const apron::Pipeline pipeline({"gaussian:sigma=1", "dilate:se=rect:3x3"});
    const apron::Image output = pipeline.run(input);
    if (output.width() != width || output.height() != height || output.type() != apron::PixelType::u8) {
        std::fprintf(stderr, "consumer: output is %dx%d %s, expected 37x23 u8\n", output.width(),
                     output.height(), apron::to_string(output.type()));
        return 1;
    }
    int mismatches = 0;
    for (int y = 0; y < height; ++y) {
        for (int x = 4; x <= 32; ++x) {
            const int got = output.row<std::uint8_t>(y)[x], expected = 5 * (x + 1);
            if (got != expected && mismatches++ < 5)
                std::fprintf(stderr, "consumer: pixel (%d, %d) is %d, expected %d\n", x, y, got, expected);
        }
    }
    if (mismatches > 0) return 1;

    // apron's errors cross the library boundary as apron::Error.
    try {
        apron::Pipeline bad({"gaussian:sigma=-1"});
        std::fprintf(stderr, "consumer: gaussian:sigma=-1 was accepted\n");
        return 1;
    } catch (const apron::Error& e) {
        std::printf("consumer: expected error: %s\n", e.what());
    }
    std::printf("consumer: ok, pixel (20, 11) = %d\n", output.row<std::uint8_t>(11)[20]);
    return 0;
}
