// Bessel functions of the first and second kinds, the modified Bessel functions of the second kind,
// the spherical Bessel function j0 and the Airy function Ai as elementwise StableHLO, computed in
// f64 and rounded once to the output type, with PyTorch's CPU values at 0, the infinities and
// outside the domain (the modified I0, I1 are lowering::kI0, kI1 of special_functions.h).
#pragma once

#include "graph/node.h"

namespace torch_pjrt::lowering {

// (x): J0, J1 (even and odd); Y0, Y1 (-inf at 0, NaN below 0). NaN at the infinities, as
// PyTorch's kernels give.
extern const graph::OpDef kBesselJ0;
extern const graph::OpDef kBesselJ1;
extern const graph::OpDef kBesselY0;
extern const graph::OpDef kBesselY1;
// (x): K0, K1 and exp(x) K0, exp(x) K1: inf at 0, NaN below 0, 0 at +inf.
extern const graph::OpDef kModifiedBesselK0;
extern const graph::OpDef kModifiedBesselK1;
extern const graph::OpDef kScaledModifiedBesselK0;
extern const graph::OpDef kScaledModifiedBesselK1;
// (x): sin(x) / x, 1 at 0 and 0 at the infinities.
extern const graph::OpDef kSphericalBesselJ0;
// (x): Ai(x), NaN at the infinities.
extern const graph::OpDef kAiryAi;

}  // namespace torch_pjrt::lowering
