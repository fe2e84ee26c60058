//! The ODL text of HDF-EOS2 structural metadata (`StructMetadata.0`): nested `GROUP=`/`END_GROUP=`
//! and `OBJECT=`/`END_OBJECT=` blocks of `KEY=VALUE` lines, ended by `END`. A value may continue on
//! following lines while its parentheses are open. Values are kept as text; [`values`] splits lists.

/// One `GROUP` or `OBJECT` block: its name, its `KEY=VALUE` entries and its nested blocks.
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct Node {
    /// The block's name (`GRID_1`, `DataField_1`; empty for the top).
    pub(crate) name: String,
    /// `KEY=VALUE` entries, in order.
    pub(crate) entries: Vec<(String, String)>,
    /// Nested blocks, in order.
    pub(crate) children: Vec<Node>,
}

impl Node {
    /// The value of `key`, unquoted.
    pub(crate) fn get(&self, key: &str) -> Option<&str> {
        self.entries.iter().find(|(k, _)| k == key).map(|(_, v)| v.trim_matches('"'))
    }

    /// The nested block named `name`.
    pub(crate) fn child(&self, name: &str) -> Option<&Node> {
        self.children.iter().find(|c| c.name == name)
    }
}

/// Most nesting accepted (real metadata nests 4 deep).
const MAX_DEPTH: usize = 32;

/// Parses ODL text into its top block. Unbalanced or unknown lines are skipped, never an error:
/// structural metadata only adds names and attributes.
pub(crate) fn parse(text: &str) -> Node {
    let mut stack = vec![Node::default()];
    let mut pending = String::new();
    for raw in text.lines() {
        let line = raw.trim();
        if !pending.is_empty() {
            pending.push_str(line);
            if balanced(&pending) {
                let statement = std::mem::take(&mut pending);
                apply(&mut stack, &statement);
            }
            continue;
        }
        if line.is_empty() || line == "END" {
            continue;
        }
        if balanced(line) {
            apply(&mut stack, line);
        } else {
            pending = line.to_string();
        }
    }
    while stack.len() > 1 {
        close(&mut stack);
    }
    stack.pop().unwrap_or_default()
}

fn balanced(s: &str) -> bool {
    s.matches('(').count() <= s.matches(')').count()
}

fn apply(stack: &mut Vec<Node>, statement: &str) {
    let Some((key, value)) = statement.split_once('=') else { return };
    let (key, value) = (key.trim(), value.trim());
    match key {
        "GROUP" | "OBJECT" if stack.len() < MAX_DEPTH => {
            stack.push(Node { name: value.to_string(), ..Node::default() })
        }
        "END_GROUP" | "END_OBJECT" => close(stack),
        _ => {
            if let Some(top) = stack.last_mut() {
                top.entries.push((key.to_string(), value.to_string()));
            }
        }
    }
}

fn close(stack: &mut Vec<Node>) {
    if stack.len() > 1 {
        if let Some(done) = stack.pop() {
            if let Some(parent) = stack.last_mut() {
                parent.children.push(done);
            }
        }
    }
}

/// The items of a parenthesised list value (`("YDim","XDim")` -> `YDim`, `XDim`), unquoted; a
/// single value as one item.
pub(crate) fn values(value: &str) -> Vec<String> {
    let inner = value.trim().trim_start_matches('(').trim_end_matches(')');
    inner.split(',').map(|v| v.trim().trim_matches('"').to_string()).filter(|v| !v.is_empty()).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn groups_objects_and_continued_lists() {
        let text = "GROUP=GridStructure\n\tGROUP=GRID_1\n\t\tGridName=\"G\"\n\t\tProjParams=(0,0,\n\t\t0,0)\n\t\tGROUP=DataField\n\t\t\tOBJECT=DataField_1\n\t\t\t\tDataFieldName=\"T\"\n\t\t\t\tDimList=(\"YDim\",\"XDim\")\n\t\t\tEND_OBJECT=DataField_1\n\t\tEND_GROUP=DataField\n\tEND_GROUP=GRID_1\nEND_GROUP=GridStructure\nEND\n";
        let top = parse(text);
        let grid = top.child("GridStructure").unwrap().child("GRID_1").unwrap();
        assert_eq!(grid.get("GridName"), Some("G"));
        assert_eq!(values(grid.get("ProjParams").unwrap()), ["0", "0", "0", "0"]);
        let field = grid.child("DataField").unwrap().child("DataField_1").unwrap();
        assert_eq!(values(field.get("DimList").unwrap()), ["YDim", "XDim"]);
    }

    #[test]
    fn garbage_is_skipped() {
        let top = parse("END_GROUP=x\nGROUP=a\nk=v");
        assert_eq!(top.child("a").unwrap().get("k"), Some("v"));
        assert!(parse("((((\nGROUP=a").children.is_empty());
        assert!(parse("").children.is_empty());
    }
}
