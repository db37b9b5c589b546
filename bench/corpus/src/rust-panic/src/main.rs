struct Grid {
    width: usize,
    height: usize,
    cells: Vec<i64>,
}

impl Grid {
    fn new(width: usize, height: usize) -> Self {
        let cells = (0..width * height).map(|i| ((i * 37) % 101) as i64 - 50).collect();
        Grid { width, height, cells }
    }

    fn get(&self, x: usize, y: usize) -> i64 {
        self.cells[y * self.width + x]
    }

    fn row_sum(&self, y: usize) -> i64 {
        (0..self.width).map(|x| self.get(x, y)).sum()
    }

    fn col_sum(&self, x: usize) -> i64 {
        (0..=self.height).map(|y| self.get(x, y)).sum()
    }
}

fn main() {
    let grid = Grid::new(8, 6);
    println!("grid {}x{} ({} cells)", grid.width, grid.height, grid.cells.len());
    for y in 0..grid.height {
        println!("row {y}: sum = {}", grid.row_sum(y));
    }
    for x in 0..grid.width {
        println!("col {x}: sum = {}", grid.col_sum(x));
    }
}
