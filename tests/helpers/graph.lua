-- Directed graphs as the layout specs draw them: node -> {node = anything}.
local M = {}

--- The strongly connected components of more than one node (Tarjan), each as
-- its sorted names joined by spaces, sorted: the circles of the graph.
-- nodes lists every node (the order the search starts from).
function M.circles(nodes, graph)
  local index, low, on, stack, n, out = {}, {}, {}, {}, 0, {}
  local function visit(v)
    n = n + 1
    index[v], low[v], on[v] = n, n, true
    stack[#stack + 1] = v
    local next_nodes = {}
    for w in pairs(graph[v] or {}) do next_nodes[#next_nodes + 1] = w end
    table.sort(next_nodes)
    for _, w in ipairs(next_nodes) do
      if not index[w] then
        visit(w)
        low[v] = math.min(low[v], low[w])
      elseif on[w] then
        low[v] = math.min(low[v], index[w])
      end
    end
    if low[v] == index[v] then
      local c = {}
      repeat
        local w = table.remove(stack)
        on[w] = nil
        c[#c + 1] = w
      until w == v
      if #c > 1 then
        table.sort(c)
        out[#out + 1] = table.concat(c, ' ')
      end
    end
  end
  for _, v in ipairs(nodes) do if not index[v] then visit(v) end end
  table.sort(out)
  return out
end

return M
