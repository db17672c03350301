//! JSON as the kit reads it from a user: a key given twice in one object is
//! refused, where a parser's map would keep one of the two without a word.
//! A leaf: the kit's dotted keys (`transfer.chunk`) are spelled here too.

use serde::de::{DeserializeSeed, Deserializer, Error as _, MapAccess, SeqAccess, Visitor};
use std::collections::HashSet;
use std::fmt;

/// `text` parsed as JSON, every object's keys distinct. The error of a key
/// given twice names it by its dotted path, with the line and column
/// serde_json gives it.
///
/// ```
/// use flashkit::json::parse;
/// assert!(parse(r#"{"config": {"bytes": 4096}}"#).is_ok());
/// let e = parse(r#"{"config": {"bytes": 65536, "bytes": 4096}}"#).unwrap_err();
/// assert!(e.to_string().starts_with("config.bytes is given twice"), "{e}");
/// let e = parse(r#"{"runs": [{"a": 1}, {"b": [{}, {"c": 1, "c": 2}]}]}"#).unwrap_err();
/// assert!(e.to_string().starts_with("runs[1].b[1].c is given twice"), "{e}");
/// // The same key in two objects is no key given twice.
/// assert!(parse(r#"[{"a": 1}, {"a": 2}, {"a": {"a": 3}}]"#).is_ok());
/// ```
pub fn parse(text: &str) -> Result<serde_json::Value, serde_json::Error> {
    let v = serde_json::from_str(text)?;
    let mut de = serde_json::Deserializer::from_str(text);
    Distinct {
        parent: None,
        step: Step::Top,
    }
    .deserialize(&mut de)?;
    Ok(v)
}

/// `key` under `at` as the kit spells a nested key (of a JSON object, or
/// a TOML table): `transfer.chunk`, or `key` alone at the top (`at`
/// empty).
pub(crate) fn dotted(at: &str, key: &str) -> String {
    if at.is_empty() {
        key.to_string()
    } else {
        format!("{at}.{key}")
    }
}

/// A walk over any JSON value that refuses an object's key given twice:
/// where the value is, as the step to it from its parent's place (empty
/// at the top). The dotted path is spelled only for an error: spelled at
/// every value, a long path over a long list took time of their product.
#[derive(Clone, Copy)]
struct Distinct<'a> {
    parent: Option<&'a Distinct<'a>>,
    step: Step<'a>,
}

#[derive(Clone, Copy)]
enum Step<'a> {
    Top,
    Key(&'a str),
    Index(usize),
}

impl Distinct<'_> {
    /// The value's dotted path: `config.bytes`, `runs[2].states`.
    fn path(&self) -> String {
        let at = self.parent.map(Distinct::path).unwrap_or_default();
        match self.step {
            Step::Top => at,
            Step::Key(k) => dotted(&at, k),
            Step::Index(i) => format!("{at}[{i}]"),
        }
    }
}

impl<'de> DeserializeSeed<'de> for Distinct<'_> {
    type Value = ();
    fn deserialize<D: Deserializer<'de>>(self, d: D) -> Result<(), D::Error> {
        d.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Distinct<'_> {
    type Value = ();

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
        let mut seen = HashSet::new();
        while let Some(k) = map.next_key::<String>()? {
            let inner = Distinct {
                parent: Some(&self),
                step: Step::Key(&k),
            };
            if seen.contains(&k) {
                return Err(A::Error::custom(format!("{} is given twice", inner.path())));
            }
            map.next_value_seed(inner)?;
            seen.insert(k);
        }
        Ok(())
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<(), A::Error> {
        let mut i = 0usize;
        while seq
            .next_element_seed(Distinct {
                parent: Some(&self),
                step: Step::Index(i),
            })?
            .is_some()
        {
            i += 1;
        }
        Ok(())
    }

    fn visit_bool<E>(self, _: bool) -> Result<(), E> {
        Ok(())
    }
    fn visit_i64<E>(self, _: i64) -> Result<(), E> {
        Ok(())
    }
    fn visit_u64<E>(self, _: u64) -> Result<(), E> {
        Ok(())
    }
    fn visit_f64<E>(self, _: f64) -> Result<(), E> {
        Ok(())
    }
    fn visit_str<E>(self, _: &str) -> Result<(), E> {
        Ok(())
    }
    fn visit_unit<E>(self) -> Result<(), E> {
        Ok(())
    }
}

/// The dotted path of the first place, below `at`, where `given` does not
/// hold what `full` (the same value as the kit writes it, read back) does,
/// and why: a key left out, a `null` for a value, a list for a table (which
/// a reader fills by position), a list of another length. A value read
/// as its default or by position would make a rerun run another
/// configuration than the one written; scalars are compared by kind only
/// (each was read as its type already).
pub(crate) fn unlike(
    given: &serde_json::Value,
    full: &serde_json::Value,
    at: &str,
) -> Option<(String, &'static str)> {
    use serde_json::Value;
    let kind = |v: &Value| match v {
        Value::Null => "null",
        Value::Object(_) => "a table",
        Value::Array(_) => "a list",
        _ => "a value",
    };
    match (given, full) {
        (Value::Object(g), Value::Object(f)) => f.iter().find_map(|(k, x)| {
            let path = dotted(at, k);
            match g.get(k) {
                None => Some((path, "missing")),
                Some(y) => unlike(y, x, &path),
            }
        }),
        (Value::Array(g), Value::Array(f)) if g.len() != f.len() => Some((
            at.to_string(),
            "a list of another length than the one written",
        )),
        (Value::Array(g), Value::Array(f)) => g
            .iter()
            .zip(f)
            .enumerate()
            .find_map(|(i, (y, x))| unlike(y, x, &format!("{at}.{i}"))),
        (g, f) if kind(g) != kind(f) => Some((
            at.to_string(),
            match (kind(g), kind(f)) {
                ("null", _) => "null, where a value is written",
                ("a list", "a table") => "a list, where a table is written",
                _ => "not the kind of value written here",
            },
        )),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::unlike;
    use serde_json::json;

    #[test]
    fn a_value_read_as_its_default_or_by_position_is_unlike_the_one_written() {
        let full = json!({"a": {"b": 1, "c": [1, 2]}, "d": null});
        assert_eq!(unlike(&full, &full, "config"), None);
        let cases = [
            (
                json!({"a": {"c": [1, 2]}, "d": null}),
                "config.a.b",
                "missing",
            ),
            (
                json!({"a": {"b": null, "c": [1, 2]}, "d": null}),
                "config.a.b",
                "null",
            ),
            (
                json!({"a": [1, [1, 2]], "d": null}),
                "config.a",
                "a list, where",
            ),
            (
                json!({"a": {"b": 1, "c": [1]}, "d": null}),
                "config.a.c",
                "another length",
            ),
        ];
        for (given, path, why) in cases {
            let (p, w) = unlike(&given, &full, "config").unwrap();
            assert_eq!(p, path);
            assert!(w.starts_with(why) || w.contains(why), "{w}");
        }
    }
}
