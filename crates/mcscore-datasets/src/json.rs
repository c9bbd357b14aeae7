//! JSON read with every object's keys unique, at any depth. Parsers differ on
//! a repeated key (serde_json keeps the last, Python's `json` the last, others
//! the first), so a row or a request that gives a key twice means different
//! things to different readers: a proxy in front of `serve` could check one
//! request and pass another, and a source row could be verified as one
//! question and built as another. Both refuse it.

use serde_json::{Map, Value};

/// A JSON value whose objects, at any depth, give each key once.
pub struct Unique(pub Value);

/// The key a [`Unique`] refused, and where (`line L column C`), from
/// serde_json's error.
pub fn duplicate_key(error: &serde_json::Error) -> Option<(String, String)> {
    // serde_json's message: `duplicate key "prompt" at line 1 column 30`.
    let message = error.to_string();
    let (key, at) = message.strip_prefix(DUPLICATE)?.rsplit_once(" at ")?;
    Some((serde_json::from_str::<String>(key).ok()?, at.to_owned()))
}

const DUPLICATE: &str = "duplicate key ";

impl<'de> serde::Deserialize<'de> for Unique {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Unique, D::Error> {
        deserializer.deserialize_any(UniqueVisitor).map(Unique)
    }
}

struct UniqueVisitor;

impl<'de> serde::de::Visitor<'de> for UniqueVisitor {
    type Value = Value;

    fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }
    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }
    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(serde_json::Number::from_f64(v).map_or(Value::Null, Value::Number))
    }
    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }
    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }
    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }
    fn visit_some<D: serde::Deserializer<'de>>(self, d: D) -> Result<Value, D::Error> {
        serde::Deserialize::deserialize(d).map(|Unique(v)| v)
    }
    fn visit_seq<A: serde::de::SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        // Not with_capacity(size_hint): the hint comes from the input.
        let mut items = Vec::new();
        while let Some(Unique(item)) = seq.next_element()? {
            items.push(item);
        }
        Ok(Value::Array(items))
    }
    fn visit_map<A: serde::de::MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut fields = Map::new();
        while let Some(key) = map.next_key::<String>()? {
            if fields.contains_key(&key) {
                return Err(serde::de::Error::custom(format!("{DUPLICATE}{}", Value::from(key))));
            }
            let Unique(value) = map.next_value()?;
            fields.insert(key, value);
        }
        Ok(Value::Object(fields))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_given_twice_at_any_depth_is_named_with_its_place() {
        assert_eq!(serde_json::from_str::<Unique>(r#"{"a": [{"b": 1}], "c": {"d": 2}}"#).unwrap().0["c"]["d"], 2);
        for (text, key, at) in
            [(r#"{"a": 1, "a": 2}"#, "a", "line 1 column 12"), ("[{}, {\"x\": {\"y\": 1,\n \"y\": 1}}]", "y", "line 2 column 4")]
        {
            let error = serde_json::from_str::<Unique>(text).err().unwrap();
            assert_eq!(duplicate_key(&error), Some((key.to_owned(), at.to_owned())), "{text}");
        }
        let other = serde_json::from_str::<Unique>("{\"a\": }").err().unwrap();
        assert_eq!(duplicate_key(&other), None);
    }
}
