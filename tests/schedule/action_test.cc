#include "pipette/schedule/action.h"

#include <gtest/gtest.h>

namespace pipette {
namespace {

TEST(Action, FormatsPyTorchNotation) {
  EXPECT_EQ(ToString(Action::F(2, 0)), "2F0");
  EXPECT_EQ(ToString(Action::I(7, 3)), "7I3");
  EXPECT_EQ(ToString(Action::W(0, 15)), "0W15");
  EXPECT_EQ(ToString(Action::B(12, 5)), "12B5");
  EXPECT_EQ(ToString(Action::Overlap(Action::F(0, 7), Action::B(7, 3))), "(0F7;7B3)");
  EXPECT_EQ(ToString(Action::Make(ActionKind::kSendForward, 1, 0)), "1SEND_F0");
  EXPECT_EQ(ToString(Action::Make(ActionKind::kRecvBackward, 3, 2)), "3RECV_B2");
}

TEST(Action, ParsesEveryWrittenFormBack) {
  const Action actions[] = {
      Action::F(2, 0),
      Action::I(7, 3),
      Action::W(0, 15),
      Action::B(12, 5),
      Action::Overlap(Action::F(0, 7), Action::B(7, 3)),
      Action::Overlap(Action::F(1, 0), Action::I(2, 9)),
      Action::Make(ActionKind::kSendForward, 1, 0),
      Action::Make(ActionKind::kRecvForward, 2, 0),
      Action::Make(ActionKind::kSendBackward, 2, 4),
      Action::Make(ActionKind::kRecvBackward, 1, 4),
  };
  for (const Action& a : actions) {
    Result<Action> parsed = ParseAction(ToString(a));
    ASSERT_TRUE(parsed.ok()) << ToString(a) << ": " << parsed.status().message();
    EXPECT_EQ(*parsed, a) << ToString(a);
  }
}

TEST(Action, AcceptsPyTorchSpellings) {
  EXPECT_EQ(*ParseAction(" 3F1 "), Action::F(3, 1));
  EXPECT_EQ(*ParseAction("(0F7;7B3)OVERLAP_F_B"),
            Action::Overlap(Action::F(0, 7), Action::B(7, 3)));
  EXPECT_EQ(*ParseAction("1FORWARD2"), Action::F(1, 2));
  EXPECT_EQ(*ParseAction("1BACKWARD_INPUT2"), Action::I(1, 2));
  EXPECT_EQ(*ParseAction("1BACKWARD_WEIGHT2"), Action::W(1, 2));
  EXPECT_EQ(*ParseAction("1FULL_BACKWARD2"), Action::B(1, 2));
  EXPECT_EQ(*ParseAction("( 0F7 ; 7B3 )"), Action::Overlap(Action::F(0, 7), Action::B(7, 3)));
}

TEST(Action, RejectsMalformedTextNamingIt) {
  for (const char* bad : {"", "F0", "2X0", "2F", "2F-1", "2Fx", "(0F7)", "(0F7;7B3;1F1)",
                          "(7B3;0F7)", "(0F7;7W3)", "(0F7;7B3", "(0F7;7B3)FOO", "99999999999F0"}) {
    Result<Action> parsed = ParseAction(bad);
    EXPECT_FALSE(parsed.ok()) << "accepted '" << bad << "'";
    if (!parsed.ok()) {
      EXPECT_EQ(parsed.status().code(), StatusCode::kInvalidArgument);
      EXPECT_NE(parsed.status().message().find("action '"), std::string::npos);
    }
  }
}

}  // namespace
}  // namespace pipette
