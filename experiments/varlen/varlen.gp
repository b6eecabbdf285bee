# The variable-length study's figure (run.sh): per schedule, measured and predicted step time of
# each length list (4096 tokens each). gnuplot -e "datafile='...'; outfile='...'".
set terminal pngcairo size 1300,700 font ",11"
set bmargin 7
set rmargin 8
set output outfile
set title "Variable-length microbatches on the CPU engine: p = 2, gpt-long, m = 8 x 2 sequences, 4096 tokens per step\nmeasured vs simulate --costs-from the uniform run --microbatch-seqlens --attention-share"
set ylabel "step time [ms]"
set style data histogram
set style histogram cluster gap 1
set style fill solid 0.8 border -1
set boxwidth 0.9
set key top left
set grid ytics
set xtics rotate by -20
set yrange [0:*]
plot datafile using 3:xtic(sprintf("%s %s", stringcolumn(1), stringcolumn(2))) title "measured", \
     '' using 4 title "predicted"
