"""The pandoc Lua filter and writer format used by :mod:`hepwb.processing.latex`.

The filter turns pandoc's LaTeX AST into plain CommonMark that :func:`~hepwb.processing.markdown.parse_blocks`
splits cleanly: headings shifted one level down (the title is the only level-1 heading), citations
as ``[@key]``, images and raw TeX dropped, links reduced to their text, divs and spans unwrapped,
figure and table captions as paragraphs ``Figure N: …`` / ``Table N: …`` numbered in document order,
tables rendered as GFM pipe tables (spanning cells padded), and every display equation lifted out of
its paragraph into its own ``$$`` block. Title, authors and abstract (which pandoc keeps in the
metadata) are written at the top, and a ``HEPWB-META {json}`` line on stderr reports them.
"""

from __future__ import annotations

__all__ = ["LUA_FILTER", "WRITER_FORMAT"]

#: Output format: CommonMark with pipe tables, footnotes and ``$`` math; no attributes, raw HTML or divs.
WRITER_FORMAT = "commonmark_x-attributes-raw_attribute-fenced_divs-bracketed_spans-raw_html-smart"

LUA_FILTER = r"""
local stringify = pandoc.utils.stringify
local ptype = pandoc.utils.type
local CELL_FORMAT = "%(writer)s"
local function raw(text) return pandoc.RawBlock("commonmark", text) end
local function is_space(x) return x.t == "Space" or x.t == "SoftBreak" or x.t == "LineBreak" end

local function trim(inl)
  while #inl > 0 and is_space(inl[1]) do inl:remove(1) end
  while #inl > 0 and is_space(inl[#inl]) do inl:remove(#inl) end
  return inl
end

local function flatten(blocks)
  local out = pandoc.Inlines({})
  for _, b in ipairs(blocks) do
    if b.t == "Para" or b.t == "Plain" then
      if #out > 0 then out:insert(pandoc.Space()) end
      out:extend(b.content)
    end
  end
  return trim(out)
end

local function one_line(blocks)
  local txt = pandoc.write(pandoc.Pandoc(blocks), CELL_FORMAT, { wrap_text = "none" })
  txt = txt:gsub("%%s*\n%%s*", " "):gsub("^%%s+", ""):gsub("%%s+$", "")
  return (txt:gsub("|", "\\|"))
end

local function clean_tex(tex)
  tex = tex:gsub("\\ensuremath%%s*(%%b{})", function(b) return b:sub(2, -2) end)
  return (tex:gsub("\\xspace", ""))
end

local inline_pass = {
  Cite = function(el)
    local keys = {}
    for _, c in ipairs(el.citations) do table.insert(keys, "@" .. c.id) end
    return pandoc.RawInline("commonmark", "[" .. table.concat(keys, "; ") .. "]")
  end,
  Math = function(el)
    el.text = clean_tex(el.text)
    return el
  end,
  RawInline = function(el)
    if el.format == "commonmark" then return nil end
    if el.format == "latex" or el.format == "tex" then
      local s = el.text:gsub("\\[%%a@]+%%*?", " "):gsub("%%b[]", " "):gsub("[{}]", ""):gsub("%%s+", " ")
      if s:match("%%w") then return pandoc.Str(s) end
    end
    return {}
  end,
  RawBlock = function(el)
    if el.format == "commonmark" then return nil end
    return {}
  end,
  Link = function(el) return el.content end,
  Image = function(_) return {} end,
  Span = function(el) return el.content end,
  Underline = function(el) return el.content end,
  SmallCaps = function(el) return el.content end,
  Div = function(el) return el.content end,
}

local fig_n, tab_n = 0, 0
local letters = "abcdefghijklmnopqrstuvwxyz"

local function caption_para(prefix, blocks)
  local inl = flatten(blocks)
  if #inl == 0 then return nil end
  local out = pandoc.Inlines({ pandoc.Str(prefix), pandoc.Space() })
  out:extend(inl)
  return pandoc.Para(out)
end

local function table_rows(tbl)
  local rows = {}
  for _, r in ipairs(tbl.head.rows) do table.insert(rows, r) end
  local nhead = #rows
  for _, body in ipairs(tbl.bodies) do
    for _, r in ipairs(body.head) do table.insert(rows, r) end
    for _, r in ipairs(body.body) do table.insert(rows, r) end
  end
  for _, r in ipairs(tbl.foot.rows) do table.insert(rows, r) end
  return rows, nhead
end

local function render_table(tbl)
  local rows, nhead = table_rows(tbl)
  local grid, pending, ncol = {}, {}, 0
  for i, r in ipairs(rows) do
    local line, col = {}, 1
    local function skip_spanned()
      while (pending[col] or 0) > 0 do
        line[col] = ""
        pending[col] = pending[col] - 1
        col = col + 1
      end
    end
    for _, cell in ipairs(r.cells) do
      skip_spanned()
      line[col] = one_line(cell.contents)
      for k = 1, cell.col_span do
        if k > 1 then line[col + k - 1] = "" end
        if cell.row_span > 1 then pending[col + k - 1] = cell.row_span - 1 end
      end
      col = col + cell.col_span
    end
    skip_spanned()
    ncol = math.max(ncol, col - 1)
    grid[i] = line
  end
  if ncol == 0 then return nil end
  local out = {}
  local function emit(line)
    local cells = {}
    for c = 1, ncol do cells[c] = line[c] or "" end
    table.insert(out, "| " .. table.concat(cells, " | ") .. " |")
  end
  local first = math.max(nhead, 1)
  local header = {}
  for c = 1, ncol do
    local parts = {}
    for i = 1, first do
      if grid[i][c] and grid[i][c] ~= "" then table.insert(parts, grid[i][c]) end
    end
    header[c] = table.concat(parts, " ")
  end
  emit(header)
  local sep = {}
  for c = 1, ncol do sep[c] = "---" end
  table.insert(out, "| " .. table.concat(sep, " | ") .. " |")
  for i = first + 1, #grid do emit(grid[i]) end
  return raw(table.concat(out, "\n"))
end

local function do_table(tbl)
  local out = {}
  if #flatten(tbl.caption.long) > 0 then
    tab_n = tab_n + 1
    table.insert(out, caption_para("Table " .. tab_n .. ":", tbl.caption.long))
  end
  local t = render_table(tbl)
  if t then table.insert(out, t) end
  return out
end

local function do_figure(fig)
  local out, subs = {}, 0
  if #flatten(fig.caption.long) > 0 then
    fig_n = fig_n + 1
    table.insert(out, caption_para("Figure " .. fig_n .. ":", fig.caption.long))
  end
  pandoc.Blocks(fig.content):walk({
    traverse = "topdown",
    Figure = function(sub)
      subs = subs + 1
      local p = caption_para("(" .. letters:sub(subs, subs) .. ")", sub.caption.long)
      if p then table.insert(out, p) end
      return {}, false
    end,
    Table = function(t)
      for _, b in ipairs(do_table(t)) do table.insert(out, b) end
      return {}, false
    end,
  })
  return out
end

local function one_line_inlines(inl)
  return inl:walk({ SoftBreak = function() return pandoc.Space() end,
                    LineBreak = function() return pandoc.Space() end })
end

local function front_matter(meta, info)
  local out = {}
  if meta.title then
    local t = one_line_inlines(pandoc.Inlines(meta.title))
    if meta.subtitle then
      t:extend({ pandoc.Str(":"), pandoc.Space() })
      t:extend(one_line_inlines(pandoc.Inlines(meta.subtitle)))
    end
    info.title = stringify(t)
    table.insert(out, pandoc.Header(1, t))
  end
  if meta.author then
    local list = ptype(meta.author) == "List" and meta.author or { meta.author }
    info.authors = {}
    for _, a in ipairs(list) do
      local s = stringify(a):gsub("%%s+", " "):gsub("^ ", ""):gsub(" $", "")
      if s:match("%%w") then table.insert(info.authors, s) end
    end
    if #info.authors > 0 then
      table.insert(out, pandoc.Para({ pandoc.Str(table.concat(info.authors, "; ")) }))
    end
  end
  if meta.abstract then
    info.abstract = true
    table.insert(out, pandoc.Header(2, { pandoc.Str("Abstract") }))
    if ptype(meta.abstract) == "Inlines" then
      table.insert(out, pandoc.Para(pandoc.Inlines(meta.abstract)))
    else
      for _, b in ipairs(pandoc.Blocks(meta.abstract)) do table.insert(out, b) end
    end
  end
  return out
end

local doc_pass = {
  Pandoc = function(doc)
    local info = {}
    local blocks = pandoc.Blocks(front_matter(doc.meta, info))
    blocks:extend(doc.blocks:walk({
      Header = function(h)
        h.level = math.min(h.level + 1, 6)
        h.content = one_line_inlines(h.content)
        return h
      end,
    }))
    blocks = blocks:walk({
      traverse = "topdown",
      Figure = function(el) return do_figure(el), false end,
      Table = function(el) return do_table(el), false end,
    })
    info.figures, info.tables = fig_n, tab_n
    io.stderr:write("HEPWB-META " .. pandoc.json.encode(info) .. "\n")
    return pandoc.Pandoc(blocks, {})
  end,
}

local function math_block(tex)
  tex = tex:gsub("^%%s+", ""):gsub("%%s+$", ""):gsub("\n[ \t]*\n", "\n"):gsub("%%$%%$", "$ $")
  return raw("$$\n" .. tex .. "\n$$")
end

local function split(el, make)
  local has = false
  for _, x in ipairs(el.content) do
    if x.t == "Math" and x.mathtype == "DisplayMath" then has = true end
  end
  if not has then return nil end
  local out, cur = {}, pandoc.Inlines({})
  local function flush()
    trim(cur)
    if #cur > 0 then table.insert(out, make(cur)) end
    cur = pandoc.Inlines({})
  end
  for _, x in ipairs(el.content) do
    if x.t == "Math" and x.mathtype == "DisplayMath" then
      flush()
      table.insert(out, math_block(x.text))
    else
      cur:insert(x)
    end
  end
  flush()
  return out
end

local math_pass = {
  Para = function(el) return split(el, pandoc.Para) end,
  Plain = function(el) return split(el, pandoc.Plain) end,
}

return { inline_pass, doc_pass, math_pass }
""".replace("%(writer)s", WRITER_FORMAT).replace("%%", "%")
