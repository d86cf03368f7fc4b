// ClusterView::IsUp: what the current map says of a node, without a copy.
#include "server/cluster/cluster_view.h"

#include <gtest/gtest.h>

namespace strata {
namespace {

v1::NodeInfo* Add(v1::ClusterMap* map, const std::string& id, v1::NodeState state) {
  v1::NodeInfo* n = map->add_nodes();
  n->set_id(id);
  n->set_state(state);
  return n;
}

TEST(ClusterViewTest, IsUpFollowsTheLatestMap) {
  Metrics metrics("node-1");
  ClusterView view("node-1", &metrics);
  EXPECT_TRUE(view.IsUp("node-1")) << "the first map is this node alone, up";
  EXPECT_FALSE(view.IsUp("node-2")) << "not in the map";

  v1::ClusterMap map;
  map.set_membership("static");
  map.set_epoch(1);
  Add(&map, "node-1", v1::NODE_UP);
  v1::NodeInfo* two = Add(&map, "node-2", v1::NODE_DOWN);
  view.Update(map);
  EXPECT_FALSE(view.IsUp("node-2")) << "listed, down";

  map.set_epoch(2);
  two->set_state(v1::NODE_UP);
  view.Update(map);
  EXPECT_TRUE(view.IsUp("node-2"));
  EXPECT_FALSE(view.IsUp("node-3"));
}

}  // namespace
}  // namespace strata
