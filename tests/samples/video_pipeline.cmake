# ctest driver of samples/video_pipeline: runs it on the bundled digits into a fresh folder, then
# reads each video back with check_video. -D SAMPLE=, CHECK=, SOURCE_DIR=, OUT= (scratch folder).
file(REMOVE_RECURSE "${OUT}")
file(MAKE_DIRECTORY "${OUT}")

# run_and_check(<video name> <expected frames> <sample args>...): two 112-pixel panels side by
# side under a 32-pixel caption make 224x144 frames.
function(run_and_check name frames)
  execute_process(COMMAND "${SAMPLE}" "--output=${OUT}/${name}" --panel=112 ${ARGN}
                  RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "video_pipeline ${ARGN} failed (${rc})")
  endif()
  execute_process(COMMAND "${CHECK}" "${OUT}/${name}" ${frames} 224 144 RESULT_VARIABLE rc)
  if(NOT rc EQUAL 0)
    message(FATAL_ERROR "${name} is not ${frames} frames of 224x144 (${rc})")
  endif()
endfunction()

run_and_check(digits.avi 16 --fps=8)  # the default input: the 16 digits as an image sequence
run_and_check(three.avi 3 "--input=${SOURCE_DIR}/assets/digits" --frames=3)  # a folder, cut short
