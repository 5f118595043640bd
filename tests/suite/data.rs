//! Data in: every constructor of `Dataset` (row-major slices, rows, fixed-size rows, nalgebra,
//! CSV, ndarray) gives the same data set from the same numbers, each bad shape its typed error,
//! and the CSV loader's options and errors (file:line, 1-based), including random corruptions.

use nalgebra::{DMatrix, DVector};
use rand::{rngs::StdRng, Rng, SeedableRng};
use ssgp::data::{sinc_data, CsvOptions, Header, MultiDataset, Target};
use ssgp::{Dataset, Error};
use std::path::{Path, PathBuf};

/// n points of d inputs, row by row, and their targets: values of every magnitude and sign,
/// with a negative zero.
fn numbers(n: usize, d: usize, seed: u64) -> (Vec<Vec<f64>>, Vec<f64>) {
    let mut rng = StdRng::seed_from_u64(seed);
    let value = |rng: &mut StdRng| {
        let m: f64 = rng.random_range(-1.0..1.0);
        m * 10f64.powi(rng.random_range(-300..300))
    };
    let mut rows: Vec<Vec<f64>> = (0..n)
        .map(|_| (0..d).map(|_| value(&mut rng)).collect())
        .collect();
    rows[0][0] = -0.0;
    let y = (0..n).map(|_| value(&mut rng)).collect();
    (rows, y)
}

/// The numbers as CSV text: the target in column `target` (zero-based), an optional header
/// naming the inputs x1… and the target y, each number in Rust's shortest exact form (positional
/// in even rows, with an exponent in odd ones).
fn csv_text(rows: &[Vec<f64>], y: &[f64], target: usize, delimiter: char, header: bool) -> String {
    let d = rows[0].len();
    let mut text = String::new();
    let line = |fields: Vec<String>| fields.join(&delimiter.to_string()) + "\n";
    if header {
        let mut names: Vec<String> = (1..=d).map(|j| format!("x{j}")).collect();
        names.insert(target, "y".into());
        text += &line(names);
    }
    for (i, (row, yi)) in rows.iter().zip(y).enumerate() {
        let show = |v: &f64| {
            if i % 2 == 0 {
                v.to_string()
            } else {
                format!("{v:e}")
            }
        };
        let mut fields: Vec<String> = row.iter().map(show).collect();
        fields.insert(target, show(yi));
        text += &line(fields);
    }
    text
}

/// Asserts two data sets are equal bit for bit (so 0.0 and −0.0 differ).
fn assert_same_bits(a: &Dataset, b: &Dataset, label: &str) {
    assert_eq!(a.x().shape(), b.x().shape(), "{label}: shape of x");
    let bits = |m: &DMatrix<f64>| m.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    let vbits = |v: &DVector<f64>| v.iter().map(|v| v.to_bits()).collect::<Vec<_>>();
    assert!(bits(a.x()) == bits(b.x()), "{label}: x differs");
    assert!(vbits(a.y()) == vbits(b.y()), "{label}: y differs");
}

fn parse(text: &str, options: &CsvOptions) -> ssgp::Result<Dataset> {
    Dataset::from_reader(text.as_bytes(), options, "f.csv")
}

fn parse_err(text: &str, options: &CsvOptions) -> String {
    match parse(text, options) {
        Ok(d) => panic!("{text:?} parsed into {} points", d.len()),
        Err(e) => e.to_string(),
    }
}

/// A file under the system's temporary folder, removed when dropped.
struct TempFile(PathBuf);

impl TempFile {
    fn new(name: &str, contents: &str) -> Self {
        let path = std::env::temp_dir().join(format!("ssgp-{}-{name}", std::process::id()));
        std::fs::write(&path, contents).unwrap();
        Self(path)
    }
}

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

#[test]
fn every_constructor_builds_the_same_data_set_bit_for_bit() {
    // Sizes around the CSV loader's block of 1024 rows.
    for (n, d) in [(1, 1), (7, 3), (1023, 2), (1024, 4), (1025, 1), (2500, 3)] {
        let (rows, y) = numbers(n, d, n as u64);
        let reference = Dataset::new(
            DMatrix::from_fn(n, d, |i, j| rows[i][j]),
            DVector::from_vec(y.clone()),
        )
        .unwrap();
        let label = |how: &str| format!("{how}, n = {n}, D = {d}");
        let flat: Vec<f64> = rows.concat();
        let built = Dataset::from_row_major(&flat, n, d, &y).unwrap();
        assert_same_bits(&built, &reference, &label("row-major"));
        let built = Dataset::from_rows(&rows, &y).unwrap();
        assert_same_bits(&built, &reference, &label("rows"));
        let slices: Vec<&[f64]> = rows.iter().map(Vec::as_slice).collect();
        let built = Dataset::from_rows(&slices, &y).unwrap();
        assert_same_bits(&built, &reference, &label("row slices"));
        let built = Dataset::new(
            DMatrix::from_row_slice(n, d, &flat),
            DVector::from_vec(y.clone()),
        )
        .unwrap();
        assert_same_bits(&built, &reference, &label("nalgebra row slice"));

        let text = csv_text(&rows, &y, d, ',', false);
        let built = parse(&text, &CsvOptions::new()).unwrap();
        assert_same_bits(&built, &reference, &label("CSV, defaults"));
        let text = csv_text(&rows, &y, 0, ';', true);
        let options = CsvOptions::new().delimiter(b';').target(Target::Column(0));
        let built = parse(&text, &options).unwrap();
        assert_same_bits(&built, &reference, &label("CSV, ';', header, target first"));
        let middle = d / 2;
        let text = csv_text(&rows, &y, middle, '\t', true);
        let options = CsvOptions::new()
            .delimiter(b'\t')
            .header(Header::Present)
            .target(Target::named("y"));
        let built = parse(&text, &options).unwrap();
        assert_same_bits(&built, &reference, &label("CSV, tab, named target"));
    }
    let rows = [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]];
    let y = [0.5, -0.5];
    let reference = Dataset::from_rows(&rows, &y).unwrap();
    assert_same_bits(
        &Dataset::from_array_rows(&rows, &y).unwrap(),
        &reference,
        "fixed-size rows",
    );
    assert_eq!(
        reference.x()[(1, 0)],
        4.0,
        "row-major means one point per row"
    );
}

#[test]
fn row_major_data_is_not_transposed() {
    // The trap `from_row_major` removes: `DMatrix::from_vec` reads the same values column by
    // column.
    let x = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0];
    let data = Dataset::from_row_major(&x, 3, 2, &[0.0, 1.0, 2.0]).unwrap();
    assert_eq!(
        data.x().row(1).iter().copied().collect::<Vec<_>>(),
        [3.0, 4.0]
    );
    let column_major = DMatrix::from_vec(3, 2, x.to_vec());
    assert_ne!(data.x(), &column_major);
}

#[test]
fn each_bad_shape_gives_its_typed_error() {
    let e = Dataset::from_row_major(&[1.0; 5], 3, 2, &[0.0; 3]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::DimensionMismatch {
                expected: 6,
                found: 5,
                ..
            }
        ),
        "{e}"
    );
    assert_eq!(
        e.to_string(),
        "dimension mismatch in row-major inputs (n·d values): expected 6, found 5"
    );
    assert!(matches!(
        Dataset::from_row_major(&[1.0; 5], usize::MAX, 2, &[0.0; 3]),
        Err(Error::DimensionMismatch { .. })
    ));
    assert!(matches!(
        Dataset::from_row_major(&[], 0, 2, &[]),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        Dataset::from_row_major(&[], 3, 0, &[0.0; 3]),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        Dataset::from_row_major(&[1.0; 6], 3, 2, &[0.0; 2]),
        Err(Error::LengthMismatch {
            x_rows: 3,
            y_len: 2
        })
    ));
    assert!(matches!(
        Dataset::from_row_major(&[1.0, 2.0, f64::NAN, 4.0], 2, 2, &[0.0; 2]),
        Err(Error::NonFinite { row: 1, col: 0, .. })
    ));

    let no_rows: [Vec<f64>; 0] = [];
    assert!(matches!(
        Dataset::from_rows(&no_rows, &[]),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        Dataset::from_rows(&[Vec::new(), Vec::new()], &[0.0, 1.0]),
        Err(Error::EmptyData { .. })
    ));
    let ragged = [vec![1.0, 2.0], vec![3.0, 4.0], vec![5.0]];
    let e = Dataset::from_rows(&ragged, &[0.0; 3]).unwrap_err();
    assert!(
        matches!(
            e,
            Error::RaggedRows {
                row: 2,
                expected: 2,
                found: 1
            }
        ),
        "{e}"
    );
    assert!(e.to_string().contains("row 2 has 1 values"), "{e}");
    assert!(matches!(
        Dataset::from_rows(&[vec![1.0], vec![2.0]], &[0.0]),
        Err(Error::LengthMismatch { .. })
    ));
    let no_arrays: [[f64; 2]; 0] = [];
    assert!(matches!(
        Dataset::from_array_rows(&no_arrays, &[]),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        Dataset::from_array_rows(&[[], []], &[0.0, 1.0]),
        Err(Error::EmptyData { .. })
    ));
    assert!(matches!(
        Dataset::from_array_rows(&[[1.0, f64::INFINITY]], &[0.0]),
        Err(Error::NonFinite { row: 0, col: 1, .. })
    ));
}

/// One line of 2·10⁶ fields (16 MB of numbers): the loader sizes its blocks by the row's width
/// instead of reserving 1024 rows of it (16 GB) up front.
#[test]
fn csv_a_very_wide_line_loads_without_reserving_a_thousand_rows_of_it() {
    let fields = 2_000_000;
    let mut text = String::with_capacity(2 * 3 * fields);
    for row in 0..2 {
        for j in 0..fields {
            text.push_str(if (j + row) % 2 == 0 { "1," } else { "2," });
        }
        text.pop();
        text.push('\n');
    }
    let data = parse(&text, &CsvOptions::new()).unwrap();
    assert_eq!((data.len(), data.dim()), (2, fields - 1));
    assert_eq!(
        (data.x()[(0, 0)], data.x()[(1, 0)], data.y()[1]),
        (1.0, 2.0, 1.0)
    );
}

/// `Dataset::csv_header` gives the names the loader reads: quoted names holding the delimiter
/// (and the spaces inside the quotes), a BOM and `\r\n`, runs of spaces with the space delimiter, blank lines before the header; and
/// `None` for a data line, or for any line under `Header::Absent`; the names a loader then finds
/// a named target among; a first line of numbers and text the loader's error.
#[test]
fn csv_header_gives_the_names_the_loader_reads() {
    let cases: [(&str, &str, u8, Option<Vec<&str>>); 5] = [
        ("plain", "a,b,y\n1,2,3\n", b',', Some(vec!["a", "b", "y"])),
        (
            "quoted",
            "\u{feff}\" speed; m/s \";load;\"y\"\r\n1;2;3\r\n",
            b';',
            Some(vec![" speed; m/s ", "load", "y"]),
        ),
        (
            "spaces",
            "\n\n  a   b  y \n1 2 3\n",
            b' ',
            Some(vec!["a", "b", "y"]),
        ),
        ("data", "1,2,3\n4,5,6\n", b',', None),
        ("header alone", "a,b,y\n", b',', Some(vec!["a", "b", "y"])),
    ];
    for (name, text, delimiter, expected) in cases {
        let file = TempFile::new(&format!("header-{}.csv", name.replace(' ', "-")), text);
        let options = CsvOptions::new().delimiter(delimiter);
        let names = Dataset::csv_header(&file.0, &options).unwrap();
        let expected: Option<Vec<String>> =
            expected.map(|v| v.into_iter().map(String::from).collect());
        assert_eq!(names, expected, "{name}");
        if let (Some(names), true) = (&names, name != "header alone") {
            let by_name = options.clone().target(Target::named(names[1].clone()));
            let loaded = Dataset::from_csv_with(&file.0, &by_name).unwrap();
            assert_eq!(
                loaded.y()[0],
                2.0,
                "{name}: the target named {:?}",
                names[1]
            );
        }
        let absent = options.header(Header::Absent);
        assert_eq!(
            Dataset::csv_header(&file.0, &absent).unwrap(),
            None,
            "{name}"
        );
    }
    // A first line of numbers and text is neither: the loader's error, naming the line.
    let mixed = TempFile::new("header-mixed.csv", "a,2,y\n4,5,6\n");
    let e = Dataset::csv_header(&mixed.0, &CsvOptions::new()).unwrap_err();
    assert!(
        matches!(e, Error::Csv { .. }) && e.to_string().contains(":1:"),
        "{e}"
    );
    let missing = std::env::temp_dir().join("ssgp-no-such-file.csv");
    assert!(matches!(
        Dataset::csv_header(&missing, &CsvOptions::new()),
        Err(Error::Io { .. })
    ));
}

#[test]
fn csv_header_is_detected_given_or_refused() {
    let text = "x1,x2,y\n1,2,3\n4,5,6\n";
    let data = parse(text, &CsvOptions::new()).unwrap();
    assert_eq!((data.len(), data.dim()), (2, 2));
    let data = parse(text, &CsvOptions::new().header(Header::Present)).unwrap();
    assert_eq!(data.len(), 2);
    assert_eq!(
        parse_err(text, &CsvOptions::new().header(Header::Absent)),
        "f.csv:1: column 1: `x1` is not a number"
    );
    // All numbers: detected as data, or dropped as a header when told so.
    let text = "\n1,2,3\n4,5,6\n";
    assert_eq!(parse(text, &CsvOptions::new()).unwrap().len(), 2);
    let data = parse(text, &CsvOptions::new().header(Header::Present)).unwrap();
    assert_eq!((data.len(), data.y()[0]), (1, 6.0));
    // A first line that mixes numbers and text is neither dropped as a header nor taken as
    // data: an error names the line (and the caller may say it is a header).
    assert_eq!(
        parse_err("1,2x,3\n4,5,6\n", &CsvOptions::new()),
        "f.csv:1: the first line mixes numbers and text (`2x`): a header has no numbers and a \
         data row no text; fix the row, or say `Header::Present` if the line is a header"
    );
    assert_eq!(
        parse(
            "1,2x,3\n4,5,6\n",
            &CsvOptions::new().header(Header::Present)
        )
        .unwrap()
        .len(),
        1
    );
    // Every field text (an empty one included) is a header, but a header names every column:
    // an unnamed one is refused, named (before, it was read as an input — for pandas' or R's
    // row index, the row number).
    assert_eq!(
        parse_err("a,,y\n4,5,6\n", &CsvOptions::new()),
        "f.csv:1: the header's column 2 (zero-based 1) has no name: a header names every \
         column; name it, or drop the column"
    );
    assert_eq!(
        parse_err(",a,b,y\n0,1,2,3\n1,4,5,6\n", &CsvOptions::new()),
        "f.csv:1: the header's column 1 (zero-based 0) has no name: a header names every \
         column; an unnamed first column is likely a row index (pandas' `to_csv()` writes \
         one: write with `index=False`); name it, or drop the column"
    );
    assert!(parse_err(
        "\"\",a,y\n0,1,2\n",
        &CsvOptions::new().header(Header::Present)
    )
    .contains("column 1 (zero-based 0) has no name"));
    assert_eq!(
        parse_err("1,,3\n4,5,6\n", &CsvOptions::new()),
        "f.csv:1: column 2: empty field (a missing value? drop the row or fill it in)"
    );
    // Quoted names and numbers, CRLF line ends, spaces around fields.
    let data = parse(
        "\"a\" , \"y\"\r\n\"1.5\", 2\r\n 3 ,4\r\n",
        &CsvOptions::new().target(Target::named("y")),
    )
    .unwrap();
    assert_eq!(data.x().as_slice(), [1.5, 3.0]);
    assert_eq!(data.y().as_slice(), [2.0, 4.0]);
}

#[test]
fn csv_target_column_by_index_and_by_name() {
    let text = "a,y,b\n1,2,3\n4,5,6\n";
    let by_name = parse(text, &CsvOptions::new().target(Target::named("y"))).unwrap();
    let by_index = parse(text, &CsvOptions::new().target(Target::Column(1))).unwrap();
    assert_eq!(by_name, by_index);
    assert_eq!(by_name.y().as_slice(), [2.0, 5.0]);
    assert_eq!(
        by_name.x().as_slice(),
        [1.0, 4.0, 3.0, 6.0],
        "inputs keep file order"
    );
    let first = parse(text, &CsvOptions::new().target(Target::Column(0))).unwrap();
    assert_eq!(first.y().as_slice(), [1.0, 4.0]);

    assert_eq!(
        parse_err(text, &CsvOptions::new().target(Target::named("z"))),
        "f.csv:1: no column named `z` in (a, y, b)"
    );
    assert_eq!(
        parse_err(
            "y,x,y\n1,2,3\n",
            &CsvOptions::new().target(Target::named("y"))
        ),
        "f.csv:1: two columns are named `y`: 1 and 3"
    );
    assert_eq!(
        parse_err("\n\n1,2,3\n", &CsvOptions::new().target(Target::named("y"))),
        "f.csv:3: the target is named `y`, but this line is data, not a header"
    );
    assert_eq!(
        parse_err(text, &CsvOptions::new().target(Target::Column(3))),
        "f.csv:1: target column index 3 (zero-based), but 3 columns"
    );
    let named_without_header = CsvOptions::new()
        .header(Header::Absent)
        .target(Target::named("y"));
    assert!(matches!(
        parse("1,2\n", &named_without_header),
        Err(Error::InvalidParameter { name: "target", .. })
    ));
}

/// Target names match exactly, case and spaces included; a name that differs from a column's only
/// in case, surrounding spaces or a leading `#` (numpy's commented header) is still no match, but
/// the error names that column (it listed the columns, leaving the user to spot `y` for `Y`), for
/// one target and for several.
#[test]
fn csv_a_target_name_that_differs_only_in_case_names_the_near_miss() {
    let named = |name: &str| CsvOptions::new().target(Target::named(name));
    let exactly = "names match exactly, so write the name as the header does";
    assert_eq!(
        parse_err("a,y,b\n1,2,3\n", &named("Y")),
        format!(
            "f.csv:1: no column named `Y` in (a, y, b); `y` (column 2) differs only in case, \
             spaces or a leading `#`: {exactly}"
        )
    );
    assert_eq!(
        parse_err("a,\" Y\",y\n1,2,3\n", &named("Y ")),
        format!(
            "f.csv:1: no column named `Y ` in (a,  Y, y); ` Y` (column 2), `y` (column 3) \
             differ only in case, spaces or a leading `#`: {exactly}"
        )
    );
    assert_eq!(
        parse_err("# x,y\n1,2\n", &named("x")),
        format!(
            "f.csv:1: no column named `x` in (# x, y); `# x` (column 1) differs only in case, \
             spaces or a leading `#`: {exactly}"
        )
    );
    assert_eq!(
        parse("# x,y\n1,2\n", &named("# x")).unwrap().y().as_slice(),
        [1.0]
    );
    let file = TempFile::new("near-miss.csv", "x,Y1,Y2\n1,2,3\n");
    let e = MultiDataset::from_csv_with(
        &file.0,
        &CsvOptions::new(),
        &[Target::named("Y1"), Target::named("y2")],
    )
    .unwrap_err();
    assert_eq!(
        e.to_string(),
        format!(
            "invalid parameter `targets`: no column named `y2` in (x, Y1, Y2); `Y2` (column 3) \
             differs only in case, spaces or a leading `#`: {exactly}"
        )
    );
}

#[test]
fn csv_row_ranges_split_a_file_into_disjoint_shares() {
    let (rows, y) = numbers(2100, 3, 11);
    let mut text = csv_text(&rows, &y, 3, ',', true);
    text.insert_str(text.find('\n').unwrap() + 1, "\n  \n"); // blank lines are not rows
    let whole = parse(&text, &CsvOptions::new()).unwrap();
    for cuts in [
        vec![0, 1, 2100],
        vec![0, 700, 1500, 2100],
        vec![0, 1024, 2048, 2100],
    ] {
        let mut x_parts = Vec::new();
        let mut y_parts = Vec::new();
        for pair in cuts.windows(2) {
            let options = if pair[1] == 2100 {
                CsvOptions::new().rows(pair[0]..)
            } else {
                CsvOptions::new().rows(pair[0]..pair[1])
            };
            let share = parse(&text, &options).unwrap();
            assert_eq!(share.len(), pair[1] - pair[0]);
            x_parts.extend(share.x().row_iter().map(|r| r.into_owned()));
            y_parts.extend(share.y().iter().copied());
        }
        let joined =
            Dataset::new(DMatrix::from_rows(&x_parts), DVector::from_vec(y_parts)).unwrap();
        assert_same_bits(&joined, &whole, &format!("shares {cuts:?}"));
    }
    assert_eq!(
        parse(&text, &CsvOptions::new().rows(3..=4)).unwrap().len(),
        2
    );

    // Rows before the range are skipped unread and reading stops at its end: a bad line
    // outside the range does not matter, one inside does (with its line number).
    let text = "1,2\nbad\n3,4\n5,6\n7,x\n";
    assert_eq!(
        parse(text, &CsvOptions::new().rows(2..3)).unwrap().y()[0],
        4.0
    );
    assert_eq!(
        parse_err(text, &CsvOptions::new().rows(3..)),
        "f.csv:5: column 2: `x` is not a number"
    );
    assert_eq!(
        parse_err("x,y\n1,2\n3,4\n", &CsvOptions::new().rows(5..9)),
        "f.csv: no data: no data rows in the range 5..9 (the source has 2)"
    );
    assert!(matches!(
        parse("1,2\n", &CsvOptions::new().rows(4..4)),
        Err(Error::InvalidParameter { name: "rows", .. })
    ));
}

#[test]
fn csv_rows_are_counted_as_row_ranges_index_them() {
    let (rows, y) = numbers(37, 2, 5);
    let mut text = csv_text(&rows, &y, 2, ',', true);
    text.insert_str(text.find('\n').unwrap() + 1, "\n  \n"); // blank lines are not rows
    let file = TempFile::new("count.csv", &text);
    assert_eq!(
        Dataset::count_csv_rows(&file.0, &CsvOptions::new()).unwrap(),
        37
    );
    // A given range does not change the count.
    let ranged = CsvOptions::new().rows(3..5);
    assert_eq!(Dataset::count_csv_rows(&file.0, &ranged).unwrap(), 37);
    // Rows are counted, not parsed: a malformed line counts (loading it is an error).
    let bad = TempFile::new("count-bad.csv", "1,2\nnot,numbers\n3,4\n");
    assert_eq!(
        Dataset::count_csv_rows(&bad.0, &CsvOptions::new()).unwrap(),
        3
    );
    assert!(matches!(
        Dataset::count_csv_rows(file.0.with_extension("missing"), &CsvOptions::new()),
        Err(Error::Io { .. })
    ));
}

#[test]
fn csv_byte_order_mark_is_stripped() {
    let data = parse("\u{FEFF}1,2\n3,4\n", &CsvOptions::new()).unwrap();
    assert_eq!(data.x().as_slice(), [1.0, 3.0]);
    let data = parse(
        "\u{FEFF}y,x\n1,2\n",
        &CsvOptions::new().target(Target::named("y")),
    )
    .unwrap();
    assert_eq!(data.y()[0], 1.0);
    // Only at the start of the file.
    assert_eq!(
        parse_err("1,2\n\u{FEFF}3,4\n", &CsvOptions::new()),
        "f.csv:2: column 1: `\u{FEFF}3` is not a number"
    );
}

#[test]
fn csv_errors_name_file_line_and_column() {
    let o = CsvOptions::new();
    assert_eq!(
        parse_err("1,2,3\n\n4,x,6\n", &o),
        "f.csv:3: column 2: `x` is not a number"
    );
    assert_eq!(
        parse_err("1,2,3\n4,5\n", &o),
        "f.csv:2: 2 columns, but the first line has 3"
    );
    assert_eq!(
        parse_err("a,b,c\n1,2,3,4\n", &o),
        "f.csv:2: 4 columns, but the first line has 3"
    );
    assert_eq!(
        parse_err("a,b,c\n1,2,3\n4\n", &o),
        "f.csv:3: 1 column, but the first line has 3"
    );
    assert_eq!(
        parse_err("1,2\n3,NaN\n", &o),
        "f.csv:2: column 2: `NaN` is not a finite number (a missing value? drop the row or fill \
         it in)"
    );
    assert_eq!(
        parse_err("1,2\n\n\n-inf,4\n", &o),
        "f.csv:4: column 1: `-inf` is not a finite number"
    );
    assert!(matches!(
        parse("1,nan\n", &o),
        Err(Error::Csv { line: 1, .. })
    ));
    assert_eq!(
        parse_err("1\n2\n", &o),
        "f.csv:1: 1 column: need at least one input and a target"
    );
    assert_eq!(
        parse_err("1,2\n3,\u{0}\n", &o),
        "f.csv:2: column 2: `\u{0}` is not a number"
    );
    let long = format!("1,2\n1,{}\n", "9".repeat(40) + "z");
    assert_eq!(
        parse_err(&long, &o),
        format!("f.csv:2: column 2: `{}…` is not a number", "9".repeat(32))
    );
    let not_utf8 = Dataset::from_reader(&b"1,2\n3,\xFF\n"[..], &o, "f.csv").unwrap_err();
    assert_eq!(
        not_utf8.to_string(),
        "f.csv:2: column 2: `\u{FFFD}` is not a number"
    );

    for (text, reason) in [
        ("", "the source is empty or holds only blank lines"),
        (
            "\n \r\n\t\n",
            "the source is empty or holds only blank lines",
        ),
        ("\u{FEFF}", "the source is empty or holds only blank lines"),
        ("\nx,y\n\n", "only a header (line 2), no data lines"),
    ] {
        let e = parse(text, &o).unwrap_err();
        assert!(matches!(e, Error::EmptyCsv { .. }), "{text:?}: {e}");
        assert_eq!(e.to_string(), format!("f.csv: no data: {reason}"));
    }
    assert!(matches!(
        parse("1,2\n", &CsvOptions::new().delimiter(b'.')),
        Err(Error::InvalidParameter {
            name: "delimiter",
            ..
        })
    ));
}

/// The errors of a newcomer's first CSV files say what to do: a file delimited by another
/// character than the options' names it, a missing value or a decimal comma is called so, a
/// quoted header name may hold the delimiter, and quotes that split a data line are named.
#[test]
fn csv_errors_suggest_the_remedy() {
    let o = CsvOptions::new();
    assert_eq!(
        parse_err("a;b;y\n1;2;3\n", &o),
        "f.csv:1: 1 column: need at least one input and a target (the line holds `;`: a file \
         delimited by it needs `CsvOptions::delimiter(b';')`)"
    );
    assert_eq!(
        parse_err("a\tb\ty\n1\t2\t3\n", &o),
        "f.csv:1: 1 column: need at least one input and a target (the line holds `\\t`: a file \
         delimited by it needs `CsvOptions::delimiter(b'\\t')`)"
    );
    for marker in ["NA", "n/a", "NULL", "?", "-"] {
        assert_eq!(
            parse_err(&format!("a,b,y\n1,2,3\n4,{marker},6\n"), &o),
            format!(
                "f.csv:3: column 2: `{marker}` is not a number (a missing value? drop the row or \
                 fill it in)"
            )
        );
    }
    assert_eq!(
        parse_err("a;b;y\n1,5;2;3\n", &CsvOptions::new().delimiter(b';')),
        "f.csv:2: column 1: `1,5` is not a number (a decimal comma? write it as a point)"
    );
    let named = parse("\"temperature, C\",p,y\n1,2,3\n4,5,6\n", &o).unwrap();
    assert_eq!((named.len(), named.dim()), (2, 2));
    assert_eq!(
        parse_err("a,b,y\n\"1,5\",2,3\n", &o),
        "f.csv:2: 4 columns, but the first line has 3 (a delimiter between quotes splits a data \
         line too: numbers need no quotes)"
    );
}

/// A first line of missing values only (markers or empty fields) is a data row, never a header
/// dropped in silence: the error a later row would give, at line 1, and the header's remedy.
#[test]
fn csv_a_first_line_of_missing_values_is_not_taken_for_a_header() {
    let o = CsvOptions::new();
    for (text, cell) in [
        ("NA,NA\n1,2\n3,4\n", "`NA` is not a number"),
        ("?,?,?\n1,2,3\n", "`?` is not a number"),
        ("-,-\n1,2\n", "`-` is not a number"),
        (",\n1,2\n", "empty field"),
        (",,\n1,2,3\n", "empty field"),
    ] {
        assert_eq!(
            parse_err(text, &o),
            format!(
                "f.csv:1: column 1: {cell} (a missing value? drop the row or fill it in); a first \
                 line of missing values is data, not a header: say `Header::Present` if it is one"
            ),
            "{text:?}"
        );
    }
    let told = CsvOptions::new().header(Header::Present);
    assert_eq!(parse("NA,NA\n1,2\n3,4\n", &told).unwrap().len(), 2);
    // A missing value among numbers on the first line is a missing value, not a header.
    assert_eq!(
        parse_err("NA,1\n2,3\n", &o),
        "f.csv:1: column 1: `NA` is not a number (a missing value? drop the row or fill it in)"
    );
    assert_eq!(
        parse_err("1,,3\n4,5,6\n", &o),
        "f.csv:1: column 2: empty field (a missing value? drop the row or fill it in)"
    );
    // Text among them is still a line that mixes numbers and text.
    assert!(parse_err("NA,1,x\n2,3,4\n", &o).starts_with("f.csv:1: the first line mixes"));
}

/// With the space delimiter, runs of spaces separate fields (whitespace-aligned tables), and
/// leading or trailing spaces are no fields.
#[test]
fn csv_runs_of_spaces_are_one_separator() {
    let o = CsvOptions::new().delimiter(b' ');
    let data = parse("1  2\n   3 4  \n5     6\n", &o).unwrap();
    assert_eq!(data.x().as_slice(), [1.0, 3.0, 5.0]);
    assert_eq!(data.y().as_slice(), [2.0, 4.0, 6.0]);
    let named = parse(
        "  y     x\n 1   2\n 3   4\n",
        &o.clone().target(Target::named("y")),
    )
    .unwrap();
    assert_eq!(named.y().as_slice(), [1.0, 3.0]);
    assert_eq!(
        parse_err("1  2\n3   4   5\n", &o),
        "f.csv:2: 3 columns, but the first line has 2"
    );
    // Other delimiters keep every field: two commas are an empty field between them.
    assert_eq!(
        parse_err("1,,2\n", &CsvOptions::new()),
        "f.csv:1: column 2: empty field (a missing value? drop the row or fill it in)"
    );
}

/// A line that ends with a delimiter is called so, not a missing value.
#[test]
fn csv_a_trailing_delimiter_is_named() {
    let o = CsvOptions::new();
    assert_eq!(
        parse_err("1,2,\n3,4,\n", &o),
        "f.csv:1: column 3: the line ends with a delimiter (an empty last field): remove it, or \
         fill in the missing value"
    );
    assert_eq!(
        parse_err("a,b,y\n1,2,\n", &o),
        "f.csv:2: column 3: the line ends with a delimiter (an empty last field): remove it, or \
         fill in the missing value"
    );
    assert_eq!(
        parse_err("1,2\n3,4,\n", &o),
        "f.csv:2: 3 columns, but the first line has 2 (the line ends with a delimiter: remove it)"
    );
}

/// With the tab delimiter an empty first or last field is a field: the line is not trimmed of
/// its tabs (they were trimmed as whitespace, so the error fell on the next line, or named no
/// column), and a header whose first cell is empty (as pandas writes an index) is a header —
/// refused for its unnamed column, not read with the row index as an input.
#[test]
fn csv_tab_separated_empty_edge_fields_are_fields() {
    let o = CsvOptions::new().delimiter(b'\t');
    assert_eq!(
        parse_err("1\t2\t\n3\t4\t5\n", &o),
        "f.csv:1: column 3: the line ends with a delimiter (an empty last field): remove it, or \
         fill in the missing value"
    );
    let leading = parse_err("1\t2\t3\n\t5\t6\n", &o);
    assert!(leading.starts_with("f.csv:2: column 1: "), "{leading}");
    let indexed = parse_err("\tx\ty\n0\t1.5\t2\n1\t2.5\t3\n", &o);
    assert!(
        indexed.starts_with("f.csv:1: the header's column 1 (zero-based 0) has no name"),
        "{indexed}"
    );
}

/// A quoted number is read as the same number unquoted: spaces inside the quotes are trimmed as
/// outside them (`" 1"` was refused as not a number while ` 1` loaded), on the first line too,
/// and quotes holding only spaces are an empty field; a quoted name keeps its spaces.
#[test]
fn csv_quoted_numbers_are_trimmed_inside_their_quotes() {
    let o = CsvOptions::new();
    let data = parse("x,y\n\" 1\",\"2 \"\n\"\t3.5 \", 4\n", &o).unwrap();
    assert_eq!(data.x().as_slice(), [1.0, 3.5]);
    assert_eq!(data.y().as_slice(), [2.0, 4.0]);
    for header in [Header::Detect, Header::Absent] {
        let data = parse("\" 1\",\" 2\"\n3,4\n", &o.clone().header(header)).unwrap();
        assert_eq!(data.y().as_slice(), [2.0, 4.0], "{header:?}");
    }
    assert_eq!(
        parse_err("x,y\n1,\" \"\n", &o),
        "f.csv:2: column 2: empty field (a missing value? drop the row or fill it in)"
    );
    assert!(parse_err("\"a\",\" \",y\n1,2,3\n", &o)
        .starts_with("f.csv:1: the header's column 2 (zero-based 1) has no name"));
    let named = parse("\" y \",x\n1,2\n", &o.clone().target(Target::named(" y "))).unwrap();
    assert_eq!(named.y().as_slice(), [1.0]);
}

/// A `#` comment line is neither read in silence nor taken for a file delimited by spaces (its
/// error hinted at `CsvOptions::delimiter(b' ')`): the error names the line and the remedies.
/// `CsvOptions::comment(b'#')` skips whole lines starting with `#`, which are no rows.
#[test]
fn csv_comment_lines_are_named_and_skipped_only_when_asked() {
    let o = CsvOptions::new();
    let remedy = "a comment? comment lines are skipped only when asked: say \
                  `CsvOptions::comment(b'#')`, or remove them";
    assert_eq!(
        parse_err("# logger v2\nx,y\n1,2\n", &o),
        format!("f.csv:1: `# logger v2` starts with `#`: {remedy}")
    );
    assert_eq!(
        parse_err("x,y\n1,2\n  # paused\n3,4\n", &o),
        format!("f.csv:3: `# paused` starts with `#`: {remedy}")
    );
    // A comment holding the delimiter reads as a header of text: the error after it names it.
    assert_eq!(
        parse_err("# logger, v2\nx,y\n1,2\n", &o),
        "f.csv:2: column 1: `x` is not a number (line 1, read as the header, starts with `#`: \
         if it is a comment, say `CsvOptions::comment(b'#')`, or remove it)"
    );
    // A commented header, as numpy's `savetxt` writes one, is still a header.
    assert_eq!(parse("# x,y\n1,2\n", &o).unwrap().y().as_slice(), [2.0]);
    assert_eq!(
        parse_err("# x,y\n# note\n1,2\n", &o),
        format!("f.csv:2: `# note` starts with `#`: {remedy}")
    );

    let c = o.clone().comment(b'#');
    let text = "# logger, v2\n\nx,y\n1,2\n# paused\n 3,4\n#\n";
    let data = parse(text, &c).unwrap();
    assert_eq!(data.x().as_slice(), [1.0, 3.0]);
    assert_eq!(
        parse(text, &c.clone().rows(1..)).unwrap().y().as_slice(),
        [4.0]
    );
    let file = TempFile::new("comments.csv", text);
    assert_eq!(Dataset::count_csv_rows(&file.0, &c).unwrap(), 2);
    assert_eq!(
        Dataset::csv_header(&file.0, &c).unwrap(),
        Some(vec!["x".to_string(), "y".to_string()])
    );
    // Whole lines only: a comment after data is part of a field.
    assert_eq!(
        parse_err("x,y\n1,2 # note\n", &c),
        "f.csv:2: column 2: `2 # note` is not a number"
    );
    // A mark that is the delimiter, part of a number, a quote or whitespace cannot work.
    for bad in [b',', b'1', b'-', b'"', b' '] {
        assert!(
            matches!(
                parse("1,2\n", &c.clone().comment(bad)),
                Err(Error::InvalidParameter {
                    name: "comment",
                    ..
                })
            ),
            "{bad}"
        );
    }
}

/// A double quote left open at the end of its line (or of the file) is an error naming the line
/// and the quote: the rest of a header was read as one name (`"x,y` one column, with a hint at
/// another delimiter; `a,"b,y` loaded, its columns named `a` and `"b,y`, or failed on the next
/// line), a data line's quote was a count of columns or "not a number". A quoted field cannot
/// span lines; a closed quote, and a doubled one inside it, still load.
#[test]
fn csv_an_unclosed_quote_is_named_at_its_line() {
    let o = CsvOptions::new();
    let open = |line: usize, text: &str| {
        format!(
            "f.csv:{line}: a double quote is not closed on its line (`{text}`): close it, or \
             remove it (a quoted field cannot span lines)"
        )
    };
    assert_eq!(parse_err("\"x,y\n1,2\n", &o), open(1, "\"x,y"));
    assert_eq!(parse_err("a,\"b,y\n1,2\n", &o), open(1, "\"b,y"));
    assert_eq!(parse_err("a,\"b,y\n1,2,3\n", &o), open(1, "\"b,y"));
    assert_eq!(parse_err("\"temp\nC\",y\n1,2\n", &o), open(1, "\"temp"));
    assert_eq!(parse_err("x,y\n\"1,2\n3,4\n", &o), open(2, "\"1,2"));
    assert_eq!(parse_err("x,y\n1,2\n3,\"4", &o), open(3, "\"4"));
    assert_eq!(parse_err("x,y\n1,2\"\n", &o), open(2, "\""));
    let absent = o.clone().header(Header::Absent);
    assert_eq!(parse_err("\"1,2\n3,4\n", &absent), open(1, "\"1,2"));
    let file = TempFile::new("open-quote.csv", "a,\"b,y\n1,2\n");
    let e = Dataset::csv_header(&file.0, &o).unwrap_err();
    assert_eq!(
        e.to_string(),
        open(1, "\"b,y").replacen("f.csv", &file.0.display().to_string(), 1)
    );
    let e = MultiDataset::from_csv_with(&file.0, &o, &[Target::Last]).unwrap_err();
    assert!(matches!(e, Error::Csv { line: 1, .. }), "{e}");
    let data = parse("\"a \"\"b\"\"\",\"y\"\n\"1\",2\n", &o).unwrap();
    assert_eq!((data.dim(), data.y().as_slice()), (1, [2.0].as_slice()));
}

/// Lines end in `\n`, `\r\n` or a lone `\r` (old Mac files), mixed too; line numbers count each
/// ending once.
#[test]
fn csv_lines_may_end_in_a_lone_carriage_return() {
    let o = CsvOptions::new();
    let data = parse("x,y\r1,2\r3,4\r", &o).unwrap();
    assert_eq!(data.x().as_slice(), [1.0, 3.0]);
    assert_eq!(data.y().as_slice(), [2.0, 4.0]);
    assert_eq!(parse("1,2\r\n3,4\r5,6\n7,8", &o).unwrap().len(), 4);
    assert_eq!(
        parse_err("1,2\r3,4\r\r3,x\r", &o),
        "f.csv:4: column 2: `x` is not a number"
    );
    assert_eq!(
        parse_err("1,2\r\n\r\n3,x\r\n", &o),
        "f.csv:3: column 2: `x` is not a number"
    );
}

#[test]
fn csv_files_load_from_disk_with_their_path_in_errors() {
    let (rows, y) = numbers(50, 2, 5);
    let file = TempFile::new("train.csv", &csv_text(&rows, &y, 2, ',', true));
    let from_file = Dataset::from_csv(&file.0).unwrap();
    assert_same_bits(&from_file, &Dataset::from_rows(&rows, &y).unwrap(), "file");
    let share = Dataset::from_csv_with(&file.0, &CsvOptions::new().rows(10..20)).unwrap();
    assert_eq!(share.y().as_slice(), &y[10..20]);

    let bad = TempFile::new("bad.csv", "1,2\n3,4\n5\n");
    let e = Dataset::from_csv(&bad.0).unwrap_err().to_string();
    assert!(e.starts_with(&format!("{}:3: ", bad.0.display())), "{e}");
    let empty = TempFile::new("empty.csv", "");
    let e = Dataset::from_csv(&empty.0).unwrap_err().to_string();
    assert!(e.contains(&empty.0.display().to_string()), "{e}");

    let missing = Path::new("no/such/file.csv");
    let e = Dataset::from_csv(missing).unwrap_err();
    assert!(
        matches!(&e, Error::Io { path, .. } if path == missing),
        "{e}"
    );
    assert!(e.to_string().contains("no/such/file.csv"), "{e}");
}

/// One random corruption of `text`.
fn mutate(text: &mut Vec<u8>, rng: &mut StdRng) {
    const BYTES: &[u8] = b"0123456789,,,;.eE+-\n\n\r \t\"xnaif\xEF\xBB\xBF\xFF\x00";
    let pick = |rng: &mut StdRng| {
        if rng.random_bool(0.8) {
            BYTES[rng.random_range(0..BYTES.len())]
        } else {
            rng.random()
        }
    };
    let len = text.len();
    let at = |rng: &mut StdRng| rng.random_range(0..=len);
    match rng.random_range(0..7) {
        0 if len > 0 => {
            let start = rng.random_range(0..len);
            let end = (start + rng.random_range(1..4)).min(len);
            text.drain(start..end);
        }
        1 => {
            let i = at(rng);
            let count = rng.random_range(1..4);
            let bytes: Vec<u8> = (0..count).map(|_| pick(rng)).collect();
            text.splice(i..i, bytes);
        }
        2 if len > 0 => {
            let i = rng.random_range(0..len);
            text[i] = pick(rng);
        }
        3 => text.truncate(at(rng)),
        4 | 5 => {
            let lines: Vec<&[u8]> = text.split(|&b| b == b'\n').collect();
            let line = lines[rng.random_range(0..lines.len())].to_vec();
            let i = at(rng);
            let mut copy = line;
            copy.push(b'\n');
            text.splice(i..i, copy);
        }
        _ => {
            let i = at(rng);
            let bytes: Vec<u8> = (0..rng.random_range(1..20)).map(|_| rng.random()).collect();
            text.splice(i..i, bytes);
        }
    }
}

#[test]
fn randomly_corrupted_csv_never_panics_and_fails_only_as_csv() {
    let mut rng = StdRng::seed_from_u64(2024);
    let (rows, y) = numbers(6, 2, 1);
    let valid = [
        csv_text(&rows, &y, 2, ',', false),
        csv_text(&rows, &y, 1, ',', true),
        "\u{FEFF}x1,y\r\n1.5,2\r\n\r\n-3e-2,4\r\n".to_string(),
    ];
    let options = [
        CsvOptions::new(),
        CsvOptions::new().target(Target::named("y")),
        CsvOptions::new()
            .header(Header::Absent)
            .target(Target::Column(0)),
        CsvOptions::new().rows(1..4),
    ];
    let (mut ok, mut failed) = (0, 0);
    for case in 0..600 {
        let mut text = valid[case % valid.len()].clone().into_bytes();
        for _ in 0..rng.random_range(1..5) {
            mutate(&mut text, &mut rng);
        }
        let options = &options[rng.random_range(0..options.len())];
        let result = std::panic::catch_unwind(|| Dataset::from_reader(&text[..], options, "f.csv"))
            .unwrap_or_else(|_| panic!("panicked on {:?}", String::from_utf8_lossy(&text)));
        match result {
            Ok(data) => {
                assert!(data.dim() >= 1 && data.y().len() == data.x().nrows());
                assert!(data
                    .x()
                    .iter()
                    .chain(data.y().iter())
                    .all(|v| v.is_finite()));
                ok += 1;
            }
            Err(Error::Csv { line, ref path, .. }) => {
                assert!(line >= 1 && path == Path::new("f.csv"));
                failed += 1;
            }
            Err(Error::EmptyCsv { .. }) => failed += 1,
            Err(e) => panic!("{e:?} on {:?}", String::from_utf8_lossy(&text)),
        }
    }
    assert!(ok > 50 && failed > 50, "{ok} parsed, {failed} refused");
}

#[test]
fn sinc_noise_must_be_a_finite_non_negative_deviation() {
    let mut rng = StdRng::seed_from_u64(0);
    for bad in [-0.1, f64::NAN, f64::INFINITY] {
        assert!(
            matches!(
                sinc_data(10, false, bad, &mut rng),
                Err(Error::InvalidParameter {
                    name: "noise_std",
                    ..
                })
            ),
            "{bad}"
        );
    }
    let clean = sinc_data(10, true, 0.0, &mut rng).unwrap();
    assert_eq!(clean.y()[0], ssgp::data::sinc(-1.0));
}

/// More sinc points than memory holds are an allocation error, not an abort.
#[test]
fn sinc_data_beyond_memory_is_an_allocation_error() {
    let mut rng = StdRng::seed_from_u64(0);
    for n in [usize::MAX / 16, usize::MAX] {
        let result = sinc_data(n, false, 0.1, &mut rng);
        assert!(
            matches!(result, Err(Error::Allocation { .. })),
            "{n}: {:?}",
            result.map(|d| d.len())
        );
    }
    assert!(matches!(
        sinc_data(1 << 50, true, 0.1, &mut rng),
        Err(Error::Allocation { bytes, .. }) if bytes == 1 << 54
    ));
}

#[cfg(feature = "ndarray")]
mod ndarray_views {
    use super::*;
    use ssgp::data::matrix_from_ndarray;
    use ssgp::ndarray::{s, Array1, Array2, ShapeBuilder};

    #[test]
    fn every_memory_order_gives_the_same_data_set() {
        let (rows, y) = numbers(9, 3, 7);
        let reference = Dataset::from_rows(&rows, &y).unwrap();
        let standard = Array2::from_shape_fn((9, 3), |(i, j)| rows[i][j]);
        let fortran = Array2::from_shape_fn((9, 3).f(), |(i, j)| rows[i][j]);
        assert!(standard.is_standard_layout() && !fortran.is_standard_layout());
        let y_array = Array1::from_vec(y.clone());
        for (x, label) in [
            (standard.view(), "C order"),
            (fortran.view(), "Fortran order"),
        ] {
            let built = Dataset::from_ndarray(x, y_array.view()).unwrap();
            assert_same_bits(&built, &reference, label);
        }
        // A strided view: every other row and the columns reversed.
        let wide = Array2::from_shape_fn((18, 3), |(i, j)| rows[i / 2][2 - j]);
        let view = wide.slice(s![..;2, ..;-1]);
        let y_wide = Array1::from_shape_fn(27, |i| if i % 3 == 0 { y[i / 3] } else { f64::NAN });
        let built = Dataset::from_ndarray(view, y_wide.slice(s![..;3])).unwrap();
        assert_same_bits(&built, &reference, "strided view");
        assert_eq!(matrix_from_ndarray(view), *reference.x());
    }

    #[test]
    fn bad_shapes_are_typed_errors() {
        let x = Array2::<f64>::zeros((3, 2));
        assert!(matches!(
            Dataset::from_ndarray(x.view(), Array1::zeros(2).view()),
            Err(Error::LengthMismatch { .. })
        ));
        assert!(matches!(
            Dataset::from_ndarray(Array2::zeros((0, 2)).view(), Array1::zeros(0).view()),
            Err(Error::EmptyData { .. })
        ));
        assert!(matches!(
            Dataset::from_ndarray(Array2::zeros((3, 0)).view(), Array1::zeros(3).view()),
            Err(Error::EmptyData { .. })
        ));
    }
}
