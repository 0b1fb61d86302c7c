#pragma once
// test::Call: the statement of an EXPECT_THAT(..., ThrowsMessage<E>(...)) check, as one type.
// Given the lambda itself, GoogleMock instantiates the whole matcher machinery once per lambda
// type; through Call it is once per exception type in a program, and test sources with many
// error checks compiled 20 % faster (docs/reliability.md#ci-time).
#include <functional>

namespace cvattn::test {

using Call = std::function<void()>;

}  // namespace cvattn::test
