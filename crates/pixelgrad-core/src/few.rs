//! A few borrowed items without an allocation: what an op reads of each of its inputs
//! (shapes, storages) is listed on every call, and almost every op has at most four inputs.

/// Items a [`Few`] holds inline; more go into a `Vec`.
const INLINE: usize = 4;

/// References to one item per input, inline for up to [`INLINE`] inputs.
pub(crate) enum Few<'a, T: ?Sized> {
    Inline([&'a T; INLINE], usize),
    Heap(Vec<&'a T>),
}

impl<'a, T: ?Sized> Few<'a, T> {
    /// `f` of each of `items`, in order.
    pub(crate) fn of<I>(items: &[I], f: impl Fn(&I) -> &'a T) -> Self {
        let n = items.len();
        if (1..=INLINE).contains(&n) {
            // Slots past `n` repeat the last item; `as_slice` never shows them.
            Few::Inline(std::array::from_fn(|i| f(&items[i.min(n - 1)])), n)
        } else {
            Few::Heap(items.iter().map(f).collect())
        }
    }

    pub(crate) fn as_slice(&self) -> &[&'a T] {
        match self {
            Few::Inline(a, n) => &a[..*n],
            Few::Heap(v) => v,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lists_every_item_in_order_inline_or_not() {
        for n in 0..8 {
            let owned: Vec<String> = (0..n).map(|i| i.to_string()).collect();
            // Borrowed items, as an op's inputs are.
            let items: Vec<&String> = owned.iter().collect();
            let few = Few::of(&items, |s: &&String| s.as_str());
            let want: Vec<&str> = owned.iter().map(|s| s.as_str()).collect();
            assert_eq!(few.as_slice(), want.as_slice(), "{n} items");
        }
    }
}
